// swift-tools-version:6.1
// gaend: a Linux Bluetooth LE node for Google/Apple Exposure Notification.
// Layers (one direction of dependency): executables -> BLEDaemon -> HCIProtocol, ENProtocol -> COpenSSL, CGaenCrypto, CGaenZlib.
import PackageDescription

// The modules gaend links, and those of the board's gaenctl (the app, metrics, collection, the key
// server's layouts and their clients), import FoundationEssentials only (the idle daemon's
// footprint and the board's binaries' size: full Foundation brings CoreFoundation, ICU and
// FoundationInternationalization, ~1.5 MiB of the idle daemon's pages and ~40 MB of a binary).
// With member import visibility a Foundation-only member (String(format:), trimmingCharacters...)
// is a compile error in them even when a dependency imports Foundation (Tests/install checks the
// linked binary).
let daemonModule: [SwiftSetting] = [.enableUpcomingFeature("MemberImportVisibility")]

let package = Package(
    name: "gaend",
    // Synchronization's Mutex, the one lock of the package, needs macOS 15.
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "gaend", targets: ["gaend"]),
        .executable(name: "gaenctl", targets: ["gaenctl"]),
        .executable(name: "FuzzHCIEvent", targets: ["FuzzHCIEvent"]),
        .library(name: "ENProtocol", targets: ["ENProtocol"]),
        .library(name: "TrialKit", targets: ["TrialKit", "TrialFormats"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // 1.16: LogEvent, which JournalLogHandler implements (the older entry point is deprecated).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        // No traits: the default BinaryDelimitedStreams imports full Foundation (InputStream),
        // whose autolinked -lFoundation let the linker take Foundation, CoreFoundation and ICU
        // into gaend (scripts/check-gaend-foundation.sh). We use neither trait.
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.28.0", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
    ],
    targets: [
        // System library: OpenSSL libcrypto, the one crypto provider (design card: libssl-dev).
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // System library: zlib, which inflates key files in one call with its own crc32
        // (GaenBench keyfile: the ZIP library's chunked extraction and Swift CRC loop ran at 35 MB/s).
        .systemLibrary(
            name: "CGaenZlib",
            path: "Sources/CGaenZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // System library: libsqlite3, under our own small layer (GaenSQLite; see its Connection.swift for why).
        .systemLibrary(
            name: "CSQLite3",
            path: "Sources/CSQLite3",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // SQLite access for the store and gaenctl: connections, statements, transactions, a WAL
        // writer/readers pool, GRDB-compatible migrations. No Foundation.
        .target(name: "GaenSQLite", dependencies: ["CSQLite3"], swiftSettings: daemonModule),
        .testTarget(name: "GaenSQLiteTests", dependencies: ["GaenSQLite"]),
        // System library: libdbus-1, under our own small D-Bus binding (no Swift D-Bus package is available).
        .systemLibrary(
            name: "CDBus",
            path: "Sources/CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        // System library: libyaml, under our own small YAML reader (YAMLReader: why not Yams, see
        // Sources/YAMLReader/YAML.swift: Yams imports full Foundation).
        .systemLibrary(
            name: "CLibYAML",
            path: "Sources/CLibYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        // The one rule for a trial board's name (research.node, the server's user, the inbox and
        // collection paths, the inventory), standard library only: gaend's config checks it too.
        .target(name: "BoardNames", swiftSettings: daemonModule),
        // A rehearsal's one trial clock (scale and epoch) and the one reader of its file: gaend
        // (HCIHost's ScaledClock), the app half, collection and the publisher read trial time
        // the same way. No store, no D-Bus, no Foundation.
        .target(name: "TrialTime", dependencies: ["ENProtocol", "PlatformSupport", "YAMLReader"], swiftSettings: daemonModule),
        .testTarget(name: "TrialTimeTests", dependencies: ["TrialTime", "HCIHost", "KeyDistribution", "GaenApp", "HTTPClient", "ENProtocol", "PlatformSupport"]),
        // `gaenctl trial provision`: a trial's inventory (YAML) -> every board's and the server's
        // configuration (gaend.conf, app.env, passwords, htpasswd, nginx, publisher, Prometheus
        // targets, Alertmanager), written idempotently.
        .target(name: "TrialProvision", dependencies: ["BoardNames", "YAMLReader", "TrialKit"]),
        .testTarget(name: "TrialProvisionTests", dependencies: ["TrialProvision", "BoardNames", "NodeConfig", "YAMLReader", "TrialKit"]),
        // YAML documents -> node trees with marks, on libyaml; standard library only (gaend's config).
        .target(name: "YAMLReader", dependencies: ["CLibYAML"], swiftSettings: daemonModule),
        .testTarget(name: "YAMLReaderTests", dependencies: ["YAMLReader"]),
        // D-Bus's naming rules (well-known names), standard library only: the node's config checks
        // `bus_name` as it reads it without linking the D-Bus binding.
        .target(name: "DBusNames", swiftSettings: daemonModule),
        // D-Bus binding shared by the daemon and the client: values, marshalling, connection, interface
        // tables, and the generic object server (BusService) that serves tables.
        .target(name: "DBusCore", dependencies: ["CDBus", "PlatformSupport", .product(name: "Logging", package: "swift-log")],
                swiftSettings: daemonModule),
        // Thread and String(format:) on the C library, for the modules gaend links, which
        // import FoundationEssentials only (full Foundation brings CoreFoundation and ICU).
        .target(name: "PlatformSupport", dependencies: ["HCIShim"], swiftSettings: daemonModule),
        // gaend's D-Bus API: names, interface tables, typed values and requests with one
        // encoder and decoder each, shared by the daemon and the client (the API edge).
        .target(name: "GaendAPI", dependencies: ["DBusCore"], swiftSettings: daemonModule),
        // Client library of gaend's D-Bus API, used by gaenctl and the tests.
        .target(name: "GaendClient", dependencies: ["DBusCore", "DBusNames", "GaendAPI"], swiftSettings: daemonModule),
        // The few Linux calls Swift cannot make comfortably (HCI user channel, ioctls, termios, thread names).
        .target(name: "HCIShim", path: "Sources/HCIShim"),
        // The matcher's AES (AES-NI/VAES/ARMv8, chosen at run time) and lockstep HKDF (SHA-NI):
        // a benchmark proved the need (GaenBench match; see the header). OpenSSL stays the portable path.
        .target(name: "CGaenCrypto", path: "Sources/CGaenCrypto"),
        // Pure GAEN protocol: no I/O, no threads, no clock, no platform layer (scripts/test.sh's
        // layering check: it links no PlatformSupport).
        .target(
            name: "ENProtocol",
            dependencies: [
                "COpenSSL", "CGaenCrypto", "CGaenZlib",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            exclude: ["KeyExport/export.proto"],
            swiftSettings: daemonModule
        ),
        // The matcher's threads and clocks (MatchingThreads.system): the dispatch pool, the
        // monotonic clock, the kernel's per-thread accounting. ENProtocol's matcher takes them.
        .target(name: "MatchingRuntime", dependencies: ["ENProtocol"], swiftSettings: daemonModule),
        // The national apps' risk engines (CWA, NHS, SwissCovid, Immuni) and their published
        // configurations: the app side and the trial toolkit use them; the daemon uses only the
        // framework's own summaries (ENProtocol).
        .target(name: "RiskEngines", dependencies: ["ENProtocol"], swiftSettings: daemonModule),
        .testTarget(name: "RiskEnginesTests", dependencies: ["RiskEngines", "ENProtocol", "YAMLReader"], resources: [.copy("Fixtures")]),
        // The trial's files that a board writes and the toolkit reads: CSV, markers, JSON key
        // lists, the daily layout, day manifests, collected outcomes, atomic output files.
        // FoundationEssentials only, so that the board's gaenctl (GaenCollect) links no full
        // Foundation; TrialKit builds its analyses on them.
        .target(name: "TrialFormats", dependencies: ["ENProtocol", "PlatformSupport", "CGaenZlib", "COpenSSL"], swiftSettings: daemonModule),
        // Field-trial toolkit: channel analysis, trial reports, simulation, calibration.
        .target(name: "TrialKit", dependencies: ["TrialFormats", "ENProtocol", "MatchingRuntime", "RiskEngines", "CGaenZlib", "COpenSSL", "PlatformSupport"]),
        .testTarget(name: "TrialKitTests", dependencies: ["TrialKit", "TrialFormats", "ENProtocol"]),
        // The key server's published layouts (CWA distribution layout, Google key server layout):
        // the publisher's plan and tree writer and the app's readers side by side, the signed
        // app configuration. Signing and the key export format are ENProtocol's.
        .target(name: "KeyDistribution", dependencies: ["ENProtocol", "PlatformSupport", "RiskEngines", "TrialFormats"], swiftSettings: daemonModule),
        .testTarget(name: "KeyDistributionTests", dependencies: ["KeyDistribution", "ENProtocol", "PlatformSupport"]),
        // libcurl (Debian's libcurl4-openssl-dev), the app's HTTP client: security updates through
        // the OS, proxies, IPv6, HTTP/2; one handle keeps the connection alive. Loaded when first
        // used (dlopen), not linked: gaend's binary holds the board's gaenctl, and the idle daemon
        // makes no HTTP request (Sources/CCurl/include/gaend_curl.h says what it cost).
        .target(name: "CCurl", path: "Sources/CCurl"),
        // The one HTTP client (libcurl): the app's downloads and uploads, `gaenctl collect`'s
        // uploads and read-back; a trial's private CA, bounded bodies, no redirect with credentials.
        .target(name: "HTTPClient", dependencies: ["CCurl", "PlatformSupport"], swiftSettings: daemonModule),
        // The app half on a board (gaenctl app): sync state and cache, the download run over
        // both layouts, provide batching, gaend's side of a run (provide, match, risk, the
        // RiskChanged signal), the upload of the board's keys, the status text.
        .target(name: "GaenApp", dependencies: ["KeyDistribution", "ENProtocol", "RiskEngines", "HTTPClient", "GaendClient", "GaendAPI",
                                                "DBusCore", "PlatformSupport", "TrialTime"], swiftSettings: daemonModule),
        .testTarget(name: "GaenAppTests", dependencies: ["GaenApp", "HTTPClient", "KeyDistribution", "ENProtocol", "PlatformSupport", "RiskEngines",
                                                        "DBusCore", "GaendAPI"]),
        // The node's state as Prometheus metrics (`gaenctl metrics`): the exposition of one status
        // reading and of the app's status.
        .target(name: "GaenMetrics", dependencies: ["GaenApp", "GaendAPI", "GaendClient", "ENProtocol", "HCIProtocol"], swiftSettings: daemonModule),
        .testTarget(name: "GaenMetricsTests", dependencies: ["GaenMetrics", "GaenApp", "GaendAPI"]),
        // Collection (`gaenctl collect`): closed days prepared into a spool, shipped over HTTP PUT,
        // read back and checked by SHA-256 before the spool copy goes.
        .target(name: "GaenCollect", dependencies: ["GaenApp", "BoardNames", "GaendClient", "GaendAPI", "DBusCore", "HTTPClient", "TrialFormats", "ENProtocol", "PlatformSupport"], swiftSettings: daemonModule),
        .testTarget(name: "GaenCollectTests", dependencies: ["GaenCollect", "HTTPClient", "TrialFormats"]),
        // Pure HCI wire types and the H4 framer: no I/O, no clock.
        .target(name: "HCIProtocol", swiftSettings: daemonModule),
        // The HCI host: transports, the controller session, the capture, the radio owner (the one
        // sender of LE commands) and the records of a scan. gaend, `gaenctl radio` (RadioCommands) and GaenStoreBench
        // share it; it links no store and no D-Bus, so a tool that drives a controller needs neither.
        .target(
            name: "HCIHost",
            dependencies: [
                "ENProtocol", "HCIProtocol", "HCIShim", "PlatformSupport", "TrialTime",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: daemonModule
        ),
        // The node's settings: the YAML config read once into typed values, validated, with
        // errors that name the line; and the calibration editor `gaenctl calibrate` writes with.
        // It links no store and no D-Bus (the bus address is interpreted at the D-Bus edge), so
        // a tool that reads or edits the config needs neither.
        .target(
            name: "NodeConfig",
            dependencies: ["HCIHost", "ENProtocol", "DBusNames", "BoardNames", "PlatformSupport", "YAMLReader", "TrialTime"],
            swiftSettings: daemonModule
        ),
        .testTarget(name: "NodeConfigTests", dependencies: ["NodeConfig", "HCIHost", "ENProtocol", "YAMLReader"]),
        // The node's encrypted store: scans, keys, key files, markers, the clock mark, the ledger,
        // on its own executor (GaenSQLite). No D-Bus, no schedule, no services.
        .target(
            name: "GaenStore",
            dependencies: [
                "HCIHost", "ENProtocol", "HCIProtocol", "PlatformSupport", "GaenSQLite",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: daemonModule
        ),
        // The node: schedule, exposure, research, D-Bus edge, services (on HCIHost and GaenStore).
        .target(
            name: "BLEDaemon",
            dependencies: [
                "NodeConfig", "HCIHost", "ENProtocol", "MatchingRuntime", "HCIProtocol", "HCIShim", "DBusCore", "GaendAPI", "PlatformSupport", "GaenSQLite", "GaenStore", "TrialTime",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: daemonModule
        ),
        .executableTarget(
            name: "gaend",
            dependencies: [
                // The board's gaenctl, run when the binary is called as gaenctl (GaendMain).
                "BoardCommands",
                "BLEDaemon", "NodeConfig", "HCIHost", "DBusCore", "DBusNames", "GaendAPI", "ENProtocol", "PlatformSupport", "TrialTime",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: daemonModule
        ),
        // What gaenctl's commands share: the failure type, JSON lines on stdout, numeric option checks.
        .target(
            name: "CLISupport",
            dependencies: ["ENProtocol", "PlatformSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: daemonModule
        ),
        // `gaenctl radio probe|advertise|scan`: drives a controller through the HCI host alone,
        // so the radio commands compile no store and no D-Bus layer (scripts/target-graph.py
        // RadioCommands --forbid GaenSQLite,DBusCore shows it); gaenctl links them.
        .target(
            name: "RadioCommands",
            dependencies: [
                "HCIHost", "HCIProtocol", "ENProtocol", "CLISupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: daemonModule
        ),
        // The commands a board runs (`gaenctl status|keys|app|metrics|collect|start|stop`, with
        // RadioCommands' `radio`), the board gaenctl's root and what gaenctl's commands share
        // (bus options, the failure line, key files): one copy, which the full gaenctl and the
        // board's (gaend's binary called as gaenctl) both list. FoundationEssentials only, like
        // everything it links (scripts/check-gaend-foundation.sh checks the linked binary).
        .target(
            name: "BoardCommands",
            dependencies: [
                "RadioCommands", "CLISupport", "GaenApp", "GaenMetrics", "GaenCollect", "KeyDistribution", "HTTPClient", "GaendClient", "GaendAPI",
                "DBusCore", "ENProtocol", "HCIProtocol", "NodeConfig", "PlatformSupport", "BoardNames", "TrialFormats", "TrialTime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: daemonModule
        ),
        .executableTarget(
            name: "gaenctl",
            dependencies: [
                "BoardCommands", "ENProtocol", "MatchingRuntime", "RiskEngines", "NodeConfig", "RadioCommands", "CLISupport", "HCIProtocol", "GaendClient", "GaendAPI", "TrialKit", "TrialFormats", "KeyDistribution", "GaenApp",
                "GaenMetrics", "GaenCollect", "HTTPClient", "PlatformSupport", "BoardNames", "TrialProvision", "TrialTime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `trial import dp3t` reads DP-3T's SQLite result tables.
                "GaenSQLite",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Fuzz target for the HCI event decoder (tools/fuzz/run.sh FuzzHCIEvent SECONDS).
        .executableTarget(name: "FuzzHCIEvent", dependencies: ["HCIProtocol", "FuzzSupport"]),
        // Fuzz target for the advertisement payload parser (tools/fuzz/run.sh FuzzAdvertisement SECONDS).
        .executableTarget(name: "FuzzAdvertisement", dependencies: ["ENProtocol", "FuzzSupport"]),
        // Fuzz target for the D-Bus message decoder (tools/fuzz/run.sh FuzzDBusMessage SECONDS).
        .executableTarget(name: "FuzzDBusMessage", dependencies: ["DBusCore", "FuzzSupport"]),
        // The entry point shared by the fuzz targets (libFuzzer driver or corpus replay).
        .target(name: "FuzzSupport"),
        // Benchmarks print figures; they are not tests (run: scripts/bench.sh).
        // GaenBench: matching, key files, simulation; it compiles no store and no D-Bus.
        .executableTarget(name: "GaenBench", dependencies: ["BenchSupport", "ENProtocol", "MatchingRuntime", "COpenSSL", "CGaenCrypto", "TrialKit", "TrialFormats"]),
        // GaenStoreBench: the benchmarks that run the encrypted store (ingest, ingest-h4, schedule-idle).
        // StoreFixtures: the ingest benchmark writes StressRecords, the records the store's tests use.
        .executableTarget(name: "GaenStoreBench", dependencies: ["BenchSupport", "BLEDaemon", "GaenStore", "HCIHost", "HCIProtocol", "ENProtocol", "StoreFixtures", .product(name: "Logging", package: "swift-log")]),
        // Deterministic contents for the store: the numbered scan records (StressRecords) that the
        // store's tests, StoreStress and the ingest benchmark write, and the compatibility
        // fixture's contents (StoreFixture). Code for checking and loading the store, no test
        // framework; gaend and gaenctl do not link it.
        .target(name: "StoreFixtures", dependencies: ["GaenStore", "HCIHost", "HCIProtocol", "ENProtocol"]),
        // The benchmark executables' entry point, usage error and CPU/memory readings.
        .target(name: "BenchSupport"),
        // Fuzz target for the key-file reader (tools/fuzz/run.sh FuzzKeyFile SECONDS).
        .executableTarget(name: "FuzzKeyFile", dependencies: ["ENProtocol", "FuzzSupport"]),
        // Fuzz target for the sightings-file reader (tools/fuzz/run.sh FuzzSightingsFile SECONDS).
        .executableTarget(name: "FuzzSightingsFile", dependencies: ["ENProtocol", "FuzzSupport"]),
        // Fuzz target for the YAML reader, gaend's config (tools/fuzz/run.sh FuzzYAML SECONDS).
        .executableTarget(name: "FuzzYAML", dependencies: ["YAMLReader", "FuzzSupport"]),
        .testTarget(
            name: "ENProtocolTests",
            dependencies: ["ENProtocol", "MatchingRuntime", "CGaenCrypto"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(name: "HCIProtocolTests", dependencies: ["HCIProtocol", "HCITestSupport"]),
        // Bytes and H4 packets from pasted capture text (h("04 0e ..."), packet(...)), for the
        // HCI protocol's tests and the scripted controller.
        .target(name: "HCITestSupport", dependencies: ["HCIProtocol"], path: "Tests/HCITestSupport"),
        .testTarget(name: "PlatformSupportTests", dependencies: ["PlatformSupport"]),
        // What the HCI host's and the node's tests share: the manual clock, a scripted controller,
        // a log that keeps its records, waits. A library of test code (no XCTest/Testing import);
        // it needs no store, so the HCI host's tests link no BLEDaemon.
        .target(
            name: "NodeTestSupport",
            dependencies: ["HCIHost", "HCIProtocol", "HCITestSupport", "ENProtocol", "PlatformSupport", .product(name: "Logging", package: "swift-log")],
            path: "Tests/NodeTestSupport"
        ),
        .testTarget(
            name: "HCIHostTests",
            dependencies: ["HCIHost", "HCIProtocol", "ENProtocol", "PlatformSupport", "NodeTestSupport", "HCITestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "BLEDaemonTests",
            dependencies: ["BLEDaemon", "GaenStore", "NodeConfig", "HCIHost", "HCIProtocol", "DBusCore", "GaendAPI", "GaenSQLite", "PlatformSupport", "NodeTestSupport", "StoreFixtures", "TrialTime",
                           .product(name: "Logging", package: "swift-log")],
            resources: [.copy("Fixtures")]
        ),
        // Test helper: writes a store in a loop until killed (the kill -9 test runs it).
        .executableTarget(name: "StoreStress", dependencies: ["GaenStore", "HCIHost", "ENProtocol", "StoreFixtures"]),
        // D-Bus binding and API contract against private dbus-daemons and real clients.
        .testTarget(name: "BusTests", dependencies: ["DBusCore", "DBusNames", "GaendAPI", "NodeConfig", "GaendClient", "BLEDaemon", "HCIHost", "gaenctl", "gaend"]),
        // Runs the built executables end to end (they are built by `swift build --build-tests`).
        .testTarget(name: "CLITests", dependencies: ["gaenctl", "ENProtocol", "TrialFormats", "NodeTestSupport"]),
    ]
)
