/// Event_Mask of Set Event Mask (Vol 4 Part E, 7.3.1). Only the bits this host cares about
/// are named; the spec's default is `specDefault`.
public struct HCIEventMask: OptionSet, Hashable, Sendable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static let disconnectionComplete = Self(rawValue: 1 << 4)
    public static let hardwareError = Self(rawValue: 1 << 15)
    public static let dataBufferOverflow = Self(rawValue: 1 << 25)
    public static let leMeta = Self(rawValue: 1 << 61)
    /// The mask a controller has after Reset.
    public static let specDefault = Self(rawValue: 0x0000_1FFF_FFFF_FFFF)
}

/// LE_Event_Mask of LE Set Event Mask (Vol 4 Part E, 7.8.1).
public struct LEEventMask: OptionSet, Hashable, Sendable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static let connectionComplete = Self(rawValue: 1 << 0)
    public static let advertisingReport = Self(rawValue: 1 << 1)
    public static let connectionUpdateComplete = Self(rawValue: 1 << 2)
    public static let readRemoteFeaturesComplete = Self(rawValue: 1 << 3)
    public static let longTermKeyRequest = Self(rawValue: 1 << 4)
    public static let extendedAdvertisingReport = Self(rawValue: 1 << 12)
    /// The mask a controller has after Reset.
    public static let specDefault = Self(rawValue: 0x0000_0000_0000_001F)
}

/// LE features page 0 (Core spec Vol 6 Part B, 4.6 "Feature support").
public struct LEFeatures: OptionSet, Hashable, Sendable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static let encryption = Self(rawValue: 1 << 0)
    public static let extendedAdvertising = Self(rawValue: 1 << 12)

    /// Bit names as in Vol 6 Part B, 4.6 (up to Core 5.4).
    public static let bitNames: [Int: String] = [
        0: "LE Encryption", 1: "Connection Parameters Request Procedure",
        2: "Extended Reject Indication", 3: "Peripheral-initiated Features Exchange",
        4: "LE Ping", 5: "LE Data Packet Length Extension", 6: "LL Privacy",
        7: "Extended Scanner Filter Policies", 8: "LE 2M PHY",
        9: "Stable Modulation Index - Transmitter", 10: "Stable Modulation Index - Receiver",
        11: "LE Coded PHY", 12: "LE Extended Advertising", 13: "LE Periodic Advertising",
        14: "Channel Selection Algorithm #2", 15: "LE Power Class 1",
        16: "Minimum Number of Used Channels Procedure", 17: "Connection CTE Request",
        18: "Connection CTE Response", 19: "Connectionless CTE Transmitter",
        20: "Connectionless CTE Receiver", 21: "Antenna Switching During CTE Transmission (AoD)",
        22: "Antenna Switching During CTE Reception (AoA)", 23: "Receiving Constant Tone Extensions",
        24: "Periodic Advertising Sync Transfer - Sender", 25: "Periodic Advertising Sync Transfer - Recipient",
        26: "Sleep Clock Accuracy Updates", 27: "Remote Public Key Validation",
        28: "Connected Isochronous Stream - Central", 29: "Connected Isochronous Stream - Peripheral",
        30: "Isochronous Broadcaster", 31: "Synchronized Receiver",
        32: "Connected Isochronous Stream (Host Support)", 33: "LE Power Control Request",
        34: "LE Power Control Request", 35: "LE Path Loss Monitoring",
        36: "Periodic Advertising ADI support", 37: "Connection Subrating",
        38: "Connection Subrating (Host Support)", 39: "Channel Classification",
        40: "Advertising Coding Selection", 41: "Advertising Coding Selection (Host Support)",
    ]

    /// Names of the set bits, lowest bit first; unnamed bits as "bit N".
    public var names: [String] {
        (0..<64).filter { rawValue & (1 << UInt64($0)) != 0 }.map { Self.bitNames[$0] ?? "bit \($0)" }
    }
}

/// LMP features page 0 (Core spec Vol 2 Part C, 3.3). Only the LE bits are named.
public struct LMPFeatures: OptionSet, Hashable, Sendable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// LE Supported (Controller), byte 4 bit 6.
    public static let leSupportedController = Self(rawValue: 1 << 38)
    /// BR/EDR Not Supported, byte 4 bit 5.
    public static let brEdrNotSupported = Self(rawValue: 1 << 37)
}

/// The 64-octet Supported_Commands bit table (Vol 4 Part E, 6.27).
public struct SupportedCommands: Hashable, Sendable {
    public let octets: [UInt8]
    public init(octets: [UInt8]) { self.octets = octets }
    /// Whether octet `octet` bit `bit` is set (the spec's numbering).
    public func contains(octet: Int, bit: Int) -> Bool {
        octet >= 0 && octet < octets.count && bit >= 0 && bit < 8 && octets[octet] & (1 << UInt8(bit)) != 0
    }
    /// Number of commands marked supported.
    public var count: Int { octets.reduce(0) { $0 + $1.nonzeroBitCount } }
    /// LE Set Extended Advertising Parameters (octet 36 bit 1).
    public var leExtendedAdvertising: Bool { contains(octet: 36, bit: 1) }
}

/// Core specification version numbers shared by HCI_Version and LMP_Version
/// (Bluetooth Assigned Numbers, 2.1 "Core Specification Versions").
public enum CoreVersion {
    public static func name(_ v: UInt8) -> String {
        let names = ["1.0b", "1.1", "1.2", "2.0+EDR", "2.1+EDR", "3.0+HS", "4.0", "4.1", "4.2",
                     "5.0", "5.1", "5.2", "5.3", "5.4", "6.0", "6.1"]
        return Int(v) < names.count ? names[Int(v)] : "reserved(\(v))"
    }
}

/// Bluetooth SIG company identifiers (Assigned Numbers, 7.1 "Company Identifiers"), the
/// manufacturer a controller names in Read Local Version Information. The table is generated
/// (CompanyIdentifiers.swift, scripts/gen-company-ids.py) and parsed once, on first use.
public enum CompanyIdentifier {
    static let names: [UInt16: String] = {
        var table: [UInt16: String] = [:]
        for line in assigned.split(separator: "\n") {
            guard let tab = line.firstIndex(of: "\t"), let id = UInt16(line[..<tab], radix: 16) else { continue }
            table[id] = String(line[line.index(after: tab)...])
        }
        // Not in the SIG's list: the value virtual and test controllers (Bumble's) report.
        table[0xFFFF] = table[0xFFFF] ?? "Not assigned (testing/virtual)"
        return table
    }()

    public static func name(_ id: UInt16) -> String { names[id] ?? "unknown" }
}
