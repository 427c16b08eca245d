// libdbus-1, the reference D-Bus library. We bind it ourselves (Sources/DBusCore) because no
// Swift D-Bus package is available to this project; only the non-variadic API is used.
#include <dbus/dbus.h>
