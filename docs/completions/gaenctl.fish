function __gaenctl_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __gaenctl_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __gaenctl_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __gaenctl_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __gaenctl_parse_tokens -S
    set -l unparsed_tokens (__gaenctl_tokens -pc)
    switch $unparsed_tokens[1]
    case 'gaenctl'
        __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'keys'
            __gaenctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'inspect'
                __gaenctl_parse_subcommand 1 'trust=+' 'require-signature' 'version' 'h/help'
            case 'create'
                __gaenctl_parse_subcommand 0 'keys=' 'signing-key=' 'key-id=' 'key-version=' 'region=' 'o=' 'version' 'h/help'
            case 'history'
                __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'o=' 'signing-key=' 'key-id=' 'key-version=' 'region=' 'json' 'version' 'h/help'
            case 'provide'
                __gaenctl_parse_subcommand -r 1 'bus=' 'name=' 'timeout=' 'wait=' 'json' 'version' 'h/help'
            case 'publish'
                __gaenctl_parse_subcommand 0 'inbox=' 'o=' 'signing-key=+' 'key-id=+' 'key-version=+' 'country=' 'region=' 'now=' 'embargo-hours=' 'min-keys=' 'hour-days=' 'retention-days=' 'max-keys-per-file=' 'max-keys-per-day=' 'max-keys-per-board-day=' 'max-bytes-per-board-day=' 'app-config=' 'trial-clock=' 'version' 'h/help'
            end
        case 'app'
            __gaenctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'sync'
                __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'server=' 'country=' 'region=' 'trust=+' 'state-dir=' 'hook=' 'max-provide-calls=' 'run-timeout=' 'file-timeout=' 'max-package-bytes=' 'max-new-files=' 'attempts=' 'backoff=' 'max-clock-skew=' 'match-wait=' 'journal-socket=' 'cacert=' 'trial-clock=' 'version' 'h/help'
            case 'submit'
                __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'server=' 'user=' 'password-file=' 'consent=' 'state-dir=' 'upload-timeout=' 'cacert=' 'trial-clock=' 'version' 'h/help'
            case 'status'
                __gaenctl_parse_subcommand 0 'state-dir=' 'name=' 'json' 'version' 'h/help'
            end
        case 'radio'
            __gaenctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'probe'
                __gaenctl_parse_subcommand 0 'controller=' 'command-timeout=' 'verbose' 'capture=' 'capture-max-mb=' 'version' 'h/help'
            case 'advertise'
                __gaenctl_parse_subcommand 0 'controller=' 'command-timeout=' 'verbose' 'capture=' 'capture-max-mb=' 'tek=' 'duration=' 'watchdog-interval=' 'tx-power=' 'time-scale=' 'version' 'h/help'
            case 'scan'
                __gaenctl_parse_subcommand 0 'controller=' 'command-timeout=' 'verbose' 'capture=' 'capture-max-mb=' 'duration=' 'watchdog-interval=' 'scan-stall-seconds=' 'version' 'h/help'
            end
        case 'status'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'json' 'app-state=' 'version' 'h/help'
        case 'metrics'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'o/output=' 'app-state=' 'version' 'h/help'
        case 'collect'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'server=' 'user=' 'password-file=' 'spool=' 'days=' 'limit-rate=' 'cacert=' 'resend=+' 'outcomes' 'consent=' 'app-state=' 'trial-clock=' 'version' 'h/help'
        case 'start'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'version' 'h/help'
        case 'stop'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'version' 'h/help'
        case 'help'
            __gaenctl_parse_subcommand -r 1 'version'
        end
    end
end

function __gaenctl_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __gaenctl_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __gaenctl_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __gaenctl_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__gaenctl_tokens -p)
    if test -z "$(__gaenctl_tokens -t)"
        set -l index (count (__gaenctl_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'gaenctl' -f
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'keys' -d 'Read, check and write GAEN key export files.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'app' -d 'The app half on a board: download the trial server\'s key packages, provide them to gaend, compute the risk; upload the board\'s keys.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'radio' -d 'Drive a Bluetooth controller directly through HCI (no daemon).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'status' -d 'Show gaend\'s state: enabled, status, counts of advertisements, scans and sightings.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'metrics' -d 'Print the node\'s state as Prometheus metrics (text exposition format).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'collect' -d 'Ship the node\'s closed days to the trial server (daily layout over HTTP PUT).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'start' -d 'Enable gaend\'s node: advertising and scanning start.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'stop' -d 'Disable gaend\'s node: advertising and scanning stop; data is kept.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl keys" -eq 1' -fa 'inspect' -d 'Print a key export file (ZIP or bare export.bin) as JSON, checking it and its signatures.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl keys" -eq 1' -fa 'create' -d 'Write a signed key export ZIP from a JSON array of keys.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl keys" -eq 1' -fa 'history' -d 'The node\'s temporary exposure keys (from gaend), printed or as a signed export ZIP.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl keys" -eq 1' -fa 'provide' -d 'Provide diagnosis key files to gaend and wait until matching has finished.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl keys" -eq 1' -fa 'publish' -d 'Publish the inbox\'s keys as signed packages in the CWA and Google key server layouts.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys inspect"' -l 'trust' -d 'Trust a P-256 public key (PEM file) for signatures by key id ID (and VERSION, if given). Repeatable; with it, a file no trusted key verifies is rejected.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys inspect" require-signature' -l 'require-signature' -d 'Fail unless a trusted key verifies the file (needs --trust).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys inspect" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys inspect" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" keys' -l 'keys' -d 'JSON array of keys.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" signing-key' -l 'signing-key' -d 'P-256 private key (PKCS#8 or SEC1 PEM, unencrypted).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" key-id' -l 'key-id' -d 'verification_key_id recorded with the signature.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" key-version' -l 'key-version' -d 'verification_key_version recorded with the signature.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" region' -l 'region' -d 'Region of the keys (e.g. an MCC or country code).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" o' -s 'o' -d 'Output ZIP file.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" o' -s 'o' -d 'Write a signed key export ZIP.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" signing-key' -l 'signing-key' -d 'P-256 private key (PKCS#8 or SEC1 PEM) signing the ZIP.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" key-id' -l 'key-id' -d 'verification_key_id recorded with the signature.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" key-version' -l 'key-version' -d 'verification_key_version recorded with the signature.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" region' -l 'region' -d 'Region recorded in the export header.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" json' -l 'json' -d 'Print JSON instead of text.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" wait' -l 'wait' -d 'Seconds to wait for the matching result.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" json' -l 'json' -d 'Print JSON instead of text.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" inbox' -l 'inbox' -d 'Directory of submitted key files (read recursively, 3 levels).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" o' -s 'o' -d 'The published tree (a directory, replaced whole).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish"' -l 'signing-key' -d 'P-256 private key (PEM) signing the packages. Repeatable, newest first.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish"' -l 'key-id' -d 'verification_key_id of each --signing-key (one, or one per key).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish"' -l 'key-version' -d 'verification_key_version of each --signing-key (default 1).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" country' -l 'country' -d 'Country code of the CWA layout.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" region' -l 'region' -d 'Root folder of the Google layout and the export\'s region (default: the country).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" now' -l 'now' -d 'Publish as of this moment: ISO 8601 (2026-11-26T10:00:00Z) or Unix seconds (default: now).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" embargo-hours' -l 'embargo-hours' -d 'Hours after a key\'s expiry before it may be published.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" min-keys' -l 'min-keys' -d 'An hour with fewer keys is shifted into the next hour\'s package.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" hour-days' -l 'hour-days' -d 'Days (the current one included) with hour packages.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" retention-days' -l 'retention-days' -d 'Days of packages kept.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" max-keys-per-file' -l 'max-keys-per-file' -d 'Google layout: keys per file before a batch is split (at most --max-keys-per-day).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" max-keys-per-day' -l 'max-keys-per-day' -d 'Keys of one day in all packages, at most 117964 (a package then stays within what the app and gaend accept); more wait for the next day.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" max-keys-per-board-day' -l 'max-keys-per-board-day' -d 'Keys a board (a folder of the inbox) may submit in a UTC day; more are refused (15: a phone\'s upload of 14 days and today).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" max-bytes-per-board-day' -l 'max-bytes-per-board-day' -d 'Bytes of files a board may submit in a UTC day; later files are not read.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" app-config' -l 'app-config' -d 'App configuration JSON to publish signed (docs/key-server.md).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" trial-clock' -l 'trial-clock' -d 'A rehearsal\'s trial clock file (scale and epoch, docs/runbook.md): today and now are the trial\'s, as gaend\'s with the same file.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys publish" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl app" -eq 1' -fa 'sync' -d 'One run of the app: download new packages, provide them to gaend, compute the risk.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl app" -eq 1' -fa 'submit' -d 'Upload the board\'s own keys of the days that have rolled to the trial server (WebDAV PUT, basic auth).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl app" -eq 1' -fa 'status' -d 'The app\'s last sync, packages held and risk (STATE_DIR/status.json).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" server' -l 'server' -d 'The trial server\'s base URL (the published tree\'s root).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" country' -l 'country' -d 'Read the CWA distribution layout for this country.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" region' -l 'region' -d 'Read the Google key server layout under this region\'s folder.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync"' -l 'trust' -d 'Trust a P-256 public key (PEM file) for signatures by key id ID (and VERSION, if given). Repeatable; with it, a file no trusted key verifies is rejected.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" state-dir' -l 'state-dir' -d 'The app\'s state directory (default: $STATE_DIRECTORY, else /var/lib/gaend-app/NAME).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" hook' -l 'hook' -d 'Command run (through /bin/sh) when the risk turns high; GAEN_RISK_LEVEL, GAEN_RISK_ENGINE, GAEN_RISK_SINCE and GAEN_NODE in its environment.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" max-provide-calls' -l 'max-provide-calls' -d 'ProvideDiagnosisKeys calls the app makes at most per UTC day (gaend\'s limit is 6).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" run-timeout' -l 'run-timeout' -d 'Seconds for the whole run.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" file-timeout' -l 'file-timeout' -d 'Seconds per file.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" max-package-bytes' -l 'max-package-bytes' -d 'Largest package accepted, in bytes.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" max-new-files' -l 'max-new-files' -d 'New files fetched at most per run (more wait for the next runs): a broken or hostile index cannot turn one run into as many requests.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" attempts' -l 'attempts' -d 'Attempts per file.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" backoff' -l 'backoff' -d 'Seconds of the first retry\'s backoff (doubled each time, with jitter).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" max-clock-skew' -l 'max-clock-skew' -d 'Largest clock difference to the server\'s Date, in seconds.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" match-wait' -l 'match-wait' -d 'Seconds to wait for gaend\'s matching result after each provide.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" journal-socket' -l 'journal-socket' -d 'journald\'s native socket, for the high-risk entry.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" cacert' -l 'cacert' -d 'Trust the CA certificates in this PEM file instead of the system\'s (a trial\'s private CA).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" trial-clock' -l 'trial-clock' -d 'A rehearsal\'s trial clock file (scale and epoch, docs/runbook.md): today and now are the trial\'s, as gaend\'s with the same file.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app sync" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" server' -l 'server' -d 'The trial server\'s base URL.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" user' -l 'user' -d 'The board\'s user name on the server.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" password-file' -l 'password-file' -d 'File holding the board\'s password (one line).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" consent' -l 'consent' -d 'The trial\'s consent setting: yes to upload.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" state-dir' -l 'state-dir' -d 'The app\'s state directory (as app sync).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" upload-timeout' -l 'upload-timeout' -d 'Seconds for the upload.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" cacert' -l 'cacert' -d 'Trust the CA certificates in this PEM file instead of the system\'s (a trial\'s private CA).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" trial-clock' -l 'trial-clock' -d 'A rehearsal\'s trial clock file (scale and epoch, docs/runbook.md): today and now are the trial\'s, as gaend\'s with the same file.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app submit" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app status" state-dir' -l 'state-dir' -d 'The app\'s state directory (default: $STATE_DIRECTORY, else /var/lib/gaend-app/NAME).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app status" name' -l 'name' -d 'The node\'s instance (hci0), naming the default state directory.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app status" json' -l 'json' -d 'Print JSON.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app status" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl app status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl radio" -eq 1' -fa 'probe' -d 'Print a controller\'s facts as JSON: HCI/LMP version, manufacturer, address, LE features, advertising TX power.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl radio" -eq 1' -fa 'advertise' -d 'Advertise GAEN beacons for a TEK, rotating address, RPI and AEM together.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl radio" -eq 1' -fa 'scan' -d 'Scan passively and print every GAEN advertisement received.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" controller' -l 'controller' -d 'Controller address: hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT or unix:PATH.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" command-timeout' -l 'command-timeout' -d 'Seconds to wait for each HCI command\'s completion.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" verbose' -l 'verbose' -d 'Log the HCI dialogue (btmon style) to standard error.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" capture' -l 'capture' -d 'Write every HCI packet, both directions, to FILE as btsnoop (btmon -r, Wireshark).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" capture-max-mb' -l 'capture-max-mb' -d 'Rotate the capture to FILE.1 at this size (MiB).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" controller' -l 'controller' -d 'Controller address: hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT or unix:PATH.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" command-timeout' -l 'command-timeout' -d 'Seconds to wait for each HCI command\'s completion.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" verbose' -l 'verbose' -d 'Log the HCI dialogue (btmon style) to standard error.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" capture' -l 'capture' -d 'Write every HCI packet, both directions, to FILE as btsnoop (btmon -r, Wireshark).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" capture-max-mb' -l 'capture-max-mb' -d 'Rotate the capture to FILE.1 at this size (MiB).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" tek' -l 'tek' -d 'The TEK as 32 hex digits.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" duration' -l 'duration' -d 'Stop after this many seconds of real time (default: run until interrupted).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" watchdog-interval' -l 'watchdog-interval' -d 'Seconds between watchdog probes of the controller (a probe left unanswered restarts it).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" tx-power' -l 'tx-power' -d 'Calibrated TX power carried in the AEM, dBm (-127...127).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" time-scale' -l 'time-scale' -d 'Run the schedule N times faster than real time.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" controller' -l 'controller' -d 'Controller address: hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT or unix:PATH.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" command-timeout' -l 'command-timeout' -d 'Seconds to wait for each HCI command\'s completion.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" verbose' -l 'verbose' -d 'Log the HCI dialogue (btmon style) to standard error.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" capture' -l 'capture' -d 'Write every HCI packet, both directions, to FILE as btsnoop (btmon -r, Wireshark).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" capture-max-mb' -l 'capture-max-mb' -d 'Rotate the capture to FILE.1 at this size (MiB).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" duration' -l 'duration' -d 'Seconds to scan.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" watchdog-interval' -l 'watchdog-interval' -d 'Seconds between watchdog probes of the controller (a probe left unanswered restarts it).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" scan-stall-seconds' -l 'scan-stall-seconds' -d 'Seconds without any report, where the recent rhythm of reports makes that implausible, after which scanning is re-enabled (and then the controller restarted).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" json' -l 'json' -d 'Print JSON instead of text.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" app-state' -l 'app-state' -d 'The app\'s state directory, for its last sync and risk (default: /var/lib/gaend-app/NAME when it exists).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl metrics" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl metrics" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl metrics" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl metrics" o output' -l 'output' -s 'o' -d 'Write to FILE (atomically) instead of standard output.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl metrics" app-state' -l 'app-state' -d 'The app\'s state directory, for its last sync and risk (default: /var/lib/gaend-app/NAME when it exists).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl metrics" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl metrics" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" server' -l 'server' -d 'The collection URL, e.g. https://trial.example/collect/ (http or https).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" user' -l 'user' -d 'Basic-authentication user (default: the board name, research.node).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" password-file' -l 'password-file' -d 'File holding the basic-authentication password (one line).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" spool' -l 'spool' -d 'Spool directory: days prepared and not yet shipped, and what was shipped.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" days' -l 'days' -d 'Closed days looked at, counting back from yesterday (the store\'s retention bounds what exists).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" limit-rate' -l 'limit-rate' -d 'Upload at most this many bytes per second (a metered link).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" cacert' -l 'cacert' -d 'Trust the CA certificates in this PEM file instead of the system\'s (a trial\'s private CA).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect"' -l 'resend' -d 'Send this closed day again (YYYY-MM-DD), even if it was shipped. Repeatable.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" outcomes' -l 'outcomes' -d 'Also ship the board\'s keys and app outcomes (the end of a trial; needs --consent).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" consent' -l 'consent' -d 'The participant\'s consent to collect the keys and app outcomes: yes or no (OUTCOMES_CONSENT of app.env).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" app-state' -l 'app-state' -d 'The app\'s state directory, for --outcomes (default: $STATE_DIRECTORY, else /var/lib/gaend-app/NAME).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" trial-clock' -l 'trial-clock' -d 'A rehearsal\'s trial clock file (scale and epoch, docs/runbook.md): today and now are the trial\'s, as gaend\'s with the same file.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl collect" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl start" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl start" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl start" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl start" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl start" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl stop" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl stop" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl stop" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl stop" version' -l 'version' -d 'Show the version.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl stop" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl help" version' -l 'version' -d 'Show the version.'
