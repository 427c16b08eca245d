import ENProtocol
import NodeConfig

/// A calibration: TX power in the AEM (dBm), the RSSI correction applied to sightings (dB),
/// and the confidence in both.
package struct NodeCalibration: Sendable, Equatable {
    package var txPower: Int
    package var rssiCorrection: Int
    package var confidence: CalibrationConfidence

    package init(txPower: Int, rssiCorrection: Int, confidence: CalibrationConfidence) {
        self.txPower = txPower
        self.rssiCorrection = rssiCorrection
        self.confidence = confidence
    }
}

/// The calibration in use: SetCalibration's values (kept in the node state) while the config's
/// calibration is the one they were set over, else the config's (NodeState.reconcileCalibration).
/// Read without awaiting anyone by the beacons, the scans' records, matching and exports.
package final class CalibrationInUse: Sendable {
    let config: CalibrationSettings
    let stateFile: NodeStateFile
    let events: NodeEvents

    init(config: CalibrationSettings, stateFile: NodeStateFile, events: NodeEvents) {
        self.config = config
        self.stateFile = stateFile
        self.events = events
    }

    package var current: NodeCalibration {
        let state = stateFile.current
        return NodeCalibration(txPower: state.txPower ?? config.txPower, rssiCorrection: state.rssiCorrection ?? config.rssiCorrection,
                               confidence: state.calibrationConfidence.flatMap(CalibrationConfidence.init(rawValue:)) ?? config.calibrationConfidence)
    }

    /// The metadata advertised in the AEM (version 1.0 or 1.1, as configured).
    var metadata: BluetoothMetadata {
        let c = current
        return config.metadataMinorVersion == 0
            ? .v1_0(txPower: Int8(clamping: c.txPower))
            : .v1_1(txPower: Int8(clamping: c.txPower), calibrationConfidence: c.confidence)
    }

    /// SetCalibration: overrides the config's calibration until the config's changes.
    package func set(txPower: Int, rssiCorrection: Int, confidence: Int) async throws {
        guard (-127...127).contains(txPower) else { throw NodeError.invalidArgs("tx_power \(txPower) is outside -127...127 dBm") }
        guard (-127...127).contains(rssiCorrection) else { throw NodeError.invalidArgs("rssi_correction \(rssiCorrection) is outside -127...127 dB") }
        guard CalibrationConfidence(rawValue: confidence) != nil else { throw NodeError.invalidArgs("confidence \(confidence) is outside 0...3") }
        let basis = NodeState.CalibrationBasis(config)
        try await stateFile.change { state in
            state.txPower = txPower
            state.rssiCorrection = rssiCorrection
            state.calibrationConfidence = confidence
            state.calibrationBasis = basis
        }
        await events.statusChanged()
    }
}
