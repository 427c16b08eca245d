#!/bin/sh
# Enables the trial's nginx site when nginx accepts it, and reloads nginx; otherwise (no TLS
# certificate yet, a site that does not parse) leaves it disabled and says why, so that a
# package install never leaves nginx unable to start. Run by the server package's postinst and
# `make install-server`; run it again once the certificate is in place.
set -u
site=/etc/nginx/gaend-trial/gaend-trial.conf
link=/etc/nginx/sites-enabled/gaend-trial.conf
command -v nginx >/dev/null 2>&1 || { echo "gaend-trial-server: nginx not installed: site not enabled" >&2; exit 0; }
[ -d /etc/nginx/sites-enabled ] || { echo "gaend-trial-server: no /etc/nginx/sites-enabled: link $site yourself" >&2; exit 0; }
[ -e "$link" ] || ln -s "$site" "$link"
if out=$(nginx -t 2>&1); then
    if [ -d /run/systemd/system ]; then systemctl reload-or-restart nginx.service || true; fi
    echo "gaend-trial-server: site enabled ($link)"
else
    rm -f "$link"
    echo "gaend-trial-server: site left disabled, nginx -t refused it (the TLS certificate it names?):" >&2
    echo "$out" | sed 's/^/  /' >&2
    echo "  then: $0" >&2
fi
exit 0
