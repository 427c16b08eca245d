/// BLEDaemon: the node (HCI host, radio, store, D-Bus boundary).
public enum BLEDaemon {}
