import Testing
@testable import BLEDaemon
