import Testing
@testable import HCIProtocol
