/// HCIProtocol: HCI commands and events as value types, and the H4 framer. Pure: no I/O, no clock.
public enum HCIProtocol {}
