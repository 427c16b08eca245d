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
        __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'h/help'
        switch $unparsed_tokens[1]
        case 'derive'
            __gaenctl_parse_subcommand 0 'tek=' 'interval=' 'time=' 'count=' 'metadata=' 'h/help'
        case 'keys'
            __gaenctl_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'inspect'
                __gaenctl_parse_subcommand 1 'trust=+' 'require-signature' 'h/help'
            case 'create'
                __gaenctl_parse_subcommand 0 'keys=' 'signing-key=' 'key-id=' 'key-version=' 'region=' 'o=' 'h/help'
            case 'history'
                __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'o=' 'signing-key=' 'key-id=' 'key-version=' 'region=' 'json' 'h/help'
            case 'provide'
                __gaenctl_parse_subcommand -r 1 'bus=' 'name=' 'timeout=' 'wait=' 'json' 'h/help'
            end
        case 'match'
            __gaenctl_parse_subcommand 0 'sightings=' 'keys=+' 'trust=+' 'workers=' 'h/help'
        case 'windows'
            __gaenctl_parse_subcommand 0 'sightings=' 'keys=+' 'trust=+' 'workers=' 'mapping=' 'bus=' 'name=' 'timeout=' 'json' 'h/help'
        case 'radio'
            __gaenctl_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'probe'
                __gaenctl_parse_subcommand 0 'controller=' 'command-timeout=' 'verbose' 'capture=' 'capture-max-mb=' 'h/help'
            case 'advertise'
                __gaenctl_parse_subcommand 0 'controller=' 'command-timeout=' 'verbose' 'capture=' 'capture-max-mb=' 'tek=' 'duration=' 'watchdog-interval=' 'tx-power=' 'time-scale=' 'h/help'
            case 'scan'
                __gaenctl_parse_subcommand 0 'controller=' 'command-timeout=' 'verbose' 'capture=' 'capture-max-mb=' 'duration=' 'watchdog-interval=' 'scan-stall-seconds=' 'h/help'
            end
        case 'status'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'json' 'h/help'
        case 'start'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'h/help'
        case 'stop'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'h/help'
        case 'sightings'
            __gaenctl_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'watch'
                __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'count=' 'json' 'summary' 'tx-power=' 'forget-after=' 'h/help'
            case 'export'
                __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'format=' 'o=' 'from=' 'to=' 'split=' 'dir=' 'h/help'
            end
        case 'mark'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'label=' 'distance=' 'note=' 'time=' 'json' 'h/help'
        case 'markers'
            __gaenctl_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'export'
                __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'o=' 'from=' 'to=' 'config=' 'node=' 'site=' 'h/help'
            end
        case 'risk'
            __gaenctl_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'cwa'
                __gaenctl_parse_subcommand 0 'parameters=' 'app-version=' 'windows=' 'per-window' 'today=' 'h/help'
            case 'nhs'
                __gaenctl_parse_subcommand 0 'configuration=' 'windows=' 'per-window' 'method=' 'h/help'
            case 'gaen-v1'
                __gaenctl_parse_subcommand 0 'configuration=' 'windows=' 'per-window' 'today=' 'h/help'
            case 'cwa-v1'
                __gaenctl_parse_subcommand 0 'configuration=' 'windows=' 'per-window' 'today=' 'h/help'
            case 'swisscovid'
                __gaenctl_parse_subcommand 0 'configuration=' 'windows=' 'per-window' 'h/help'
            case 'immuni'
                __gaenctl_parse_subcommand 0 'configuration=' 'windows=' 'per-window' 'today=' 'h/help'
            end
        case 'summaries'
            __gaenctl_parse_subcommand 0 'windows=' 'bus=' 'name=' 'timeout=' 'config=' 'today=' 'json' 'h/help'
        case 'trial'
            __gaenctl_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'report'
                __gaenctl_parse_subcommand 0 'sightings=+' 'keys=+' 'markers=+' 'attenuations=+' 'o/output=' 'site=' 'close-contact=' 'thresholds=' 'split=' 'attenuation-format=' 'h/help'
            case 'import'
                __gaenctl_parse_subcommand 0 'h/help'
                switch $unparsed_tokens[1]
                case 'dp3t'
                    __gaenctl_parse_subcommand -r 1 'calibration=' 'o/output=' 'h/help'
                case 'leith'
                    __gaenctl_parse_subcommand 1 'at=' 'transmission-risk-level=' 'ranges=' 'o/output=' 'h/help'
                case 'histogram'
                    __gaenctl_parse_subcommand -r 1 'at=' 'transmission-risk-level=' 'o/output=' 'h/help'
                case 'rssi'
                    __gaenctl_parse_subcommand -r 1 'tx-power=' 'distance-column=' 'rssi-column=' 'distance-scale=' 'receiver=' 'transmitter=' 'o/output=' 'h/help'
                end
            case 'replay'
                __gaenctl_parse_subcommand 0 'contacts=' 'rule=+' 'close-contact=' 'json' 'h/help'
            end
        case 'simulate'
            __gaenctl_parse_subcommand 0 'scenario=' 'o/output=' 'seed=' 'random-keys' 'report' 'split=' 'format=' 'h/help'
        case 'calibrate'
            __gaenctl_parse_subcommand 0 'bus=' 'name=' 'timeout=' 'live' 'sightings=' 'markers=' 'reference-keys=' 'any-device' 'expected-rssi=' 'reference-attenuation=' 'reference-tx-power=' 'orientations=' 'min-samples=' 'seconds-per-orientation=' 'tx-power=' 'calibration-confidence=' 'config=' 'apply' 'non-interactive' 'dry-run' 'h/help'
        case 'help'
            __gaenctl_parse_subcommand -r 1 
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
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'derive' -d 'Derive RPIK, AEMK and the RPIs/AEMs of a temporary exposure key.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'keys' -d 'Read, check and write GAEN key export files.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'match' -d 'Match diagnosis keys from key files against exported sightings.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'windows' -d 'Compute exposure windows (Android API semantics) from exported sightings and key files.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'radio' -d 'Drive a Bluetooth controller directly through HCI (no daemon).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'status' -d 'Show gaend\'s state: enabled, status, counts of advertisements, scans and sightings.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'start' -d 'Enable gaend\'s node: advertising and scanning start.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'stop' -d 'Disable gaend\'s node: advertising and scanning stop; data is kept.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'sightings' -d 'Raw sightings from gaend (research interface: --trial or research.enabled).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'mark' -d 'Record a ground-truth marker in gaend (research interface).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'markers' -d 'Ground-truth markers recorded in gaend (research interface).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'risk' -d 'Run an app\'s risk engine over exposure windows (CWA, NHS, framework v1, original CWA, SwissCovid, Immuni).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'summaries' -d 'Daily summaries of exposure windows, as the framework\'s getDailySummaries returns them.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'trial' -d 'Field-trial analysis: attenuation against ground-truth distance, importers, rule replay.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'simulate' -d 'Simulate a trial: virtual nodes, the real key schedule and scan cadence, a measured channel model.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'calibrate' -d 'Compute the board\'s RSSI correction from a reference transmitter at 1 m; save it to gaend\'s config and/or apply it.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl derive" tek' -l 'tek' -d 'The TEK as 32 hex digits.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl derive" interval' -l 'interval' -d 'First ENIntervalNumber to derive.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl derive" time' -l 'time' -d 'A time, ISO 8601 (e.g. 2020-04-02T10:00:00Z) or Unix seconds; derives from its UTC day\'s first interval.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl derive" count' -l 'count' -d 'Number of intervals (1...144).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl derive" metadata' -l 'metadata' -d 'Metadata as 8 hex digits (e.g. 40080000); adds the AEM of each interval.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl derive" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl keys" -eq 1' -fa 'inspect' -d 'Print a key export file (ZIP or bare export.bin) as JSON, checking it and its signatures.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl keys" -eq 1' -fa 'create' -d 'Write a signed key export ZIP from a JSON array of keys.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl keys" -eq 1' -fa 'history' -d 'The node\'s temporary exposure keys (from gaend), printed or as a signed export ZIP.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl keys" -eq 1' -fa 'provide' -d 'Provide diagnosis key files to gaend and wait until matching has finished.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys inspect"' -l 'trust' -d 'Trust a P-256 public key (PEM file) for signatures by key id ID (and VERSION, if given). Repeatable; with it, a file no trusted key verifies is rejected.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys inspect" require-signature' -l 'require-signature' -d 'Fail unless a trusted key verifies the file (needs --trust).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys inspect" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" keys' -l 'keys' -d 'JSON array of keys.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" signing-key' -l 'signing-key' -d 'P-256 private key (PKCS#8 or SEC1 PEM, unencrypted).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" key-id' -l 'key-id' -d 'verification_key_id recorded with the signature.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" key-version' -l 'key-version' -d 'verification_key_version recorded with the signature.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" region' -l 'region' -d 'Region of the keys (e.g. an MCC or country code).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys create" o' -s 'o' -d 'Output ZIP file.' -rfka ''
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
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys history" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" wait' -l 'wait' -d 'Seconds to wait for the matching result.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" json' -l 'json' -d 'Print JSON instead of text.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl keys provide" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl match" sightings' -l 'sightings' -d 'Sightings export (CSV or JSON lines, docs/sightings-format.md).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl match"' -l 'keys' -d 'Key files: export ZIPs, bare export.bin files or JSON key lists (told apart by content).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl match"' -l 'trust' -d 'Trust a P-256 public key (PEM file) for signatures by key id ID (and VERSION, if given). Repeatable; with it, a file no trusted key verifies is rejected.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl match" workers' -l 'workers' -d 'Threads to match on (default: every core).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl match" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows" sightings' -l 'sightings' -d 'Sightings export (CSV or JSON lines, docs/sightings-format.md).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows"' -l 'keys' -d 'Key files: export ZIPs, bare export.bin files or JSON key lists (told apart by content).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows"' -l 'trust' -d 'Trust a P-256 public key (PEM file) for signatures by key id ID (and VERSION, if given). Repeatable; with it, a file no trusted key verifies is rejected.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows" workers' -l 'workers' -d 'Threads to match on (default: every core).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows" mapping' -l 'mapping' -d 'DiagnosisKeysDataMapping JSON (default: report type CONFIRMED_TEST when missing, infectiousness STANDARD).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows" json' -l 'json' -d 'With gaend: print the JSON array instead of text.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl windows" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl radio" -eq 1' -fa 'probe' -d 'Print a controller\'s facts as JSON: HCI/LMP version, manufacturer, address, LE features, advertising TX power.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl radio" -eq 1' -fa 'advertise' -d 'Advertise GAEN beacons for a TEK, rotating address, RPI and AEM together.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl radio" -eq 1' -fa 'scan' -d 'Scan passively and print every GAEN advertisement received.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" controller' -l 'controller' -d 'Controller address: hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT or unix:PATH.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" command-timeout' -l 'command-timeout' -d 'Seconds to wait for each HCI command\'s completion.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" verbose' -l 'verbose' -d 'Log the HCI dialogue (btmon style) to standard error.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" capture' -l 'capture' -d 'Write every HCI packet, both directions, to FILE as btsnoop (btmon -r, Wireshark).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio probe" capture-max-mb' -l 'capture-max-mb' -d 'Rotate the capture to FILE.1 at this size (MiB).' -rfka ''
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
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio advertise" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" controller' -l 'controller' -d 'Controller address: hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT or unix:PATH.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" command-timeout' -l 'command-timeout' -d 'Seconds to wait for each HCI command\'s completion.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" verbose' -l 'verbose' -d 'Log the HCI dialogue (btmon style) to standard error.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" capture' -l 'capture' -d 'Write every HCI packet, both directions, to FILE as btsnoop (btmon -r, Wireshark).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" capture-max-mb' -l 'capture-max-mb' -d 'Rotate the capture to FILE.1 at this size (MiB).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" duration' -l 'duration' -d 'Seconds to scan.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" watchdog-interval' -l 'watchdog-interval' -d 'Seconds between watchdog probes of the controller (a probe left unanswered restarts it).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" scan-stall-seconds' -l 'scan-stall-seconds' -d 'Seconds without any report, where the recent rhythm of reports makes that implausible, after which scanning is re-enabled (and then the controller restarted).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl radio scan" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" json' -l 'json' -d 'Print JSON instead of text.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl start" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl start" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl start" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl start" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl stop" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl stop" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl stop" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl stop" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl sightings" -eq 1' -fa 'watch' -d 'Print each scan as gaend finishes it, or a per-device summary refreshed after each scan.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl sightings" -eq 1' -fa 'export' -d 'Export raw sightings (CSV or JSON lines, docs/sightings-format.md), empty scans included.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings watch" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings watch" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings watch" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings watch" count' -l 'count' -d 'Stop after this many scans (default: run until interrupted).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings watch" json' -l 'json' -d 'Print JSON lines instead of text.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings watch" summary' -l 'summary' -d 'A per-device summary (advertiser address and RPI) refreshed after each scan.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings watch" tx-power' -l 'tx-power' -d 'With --summary: the advertisers\' TX power for attenuation (default: the node\'s TxPower).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings watch" forget-after' -l 'forget-after' -d 'With --summary: drop devices not seen for this long.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" format' -l 'format' -d 'csv or jsonl.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" o' -s 'o' -d 'Output file (default: standard output).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" from' -l 'from' -d 'Start of the range, Unix seconds or ISO 8601 such as 2026-11-20T08:00:00Z (default: 0).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" to' -l 'to' -d 'End of the range, Unix seconds or ISO 8601 (default: far future).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" split' -l 'split' -d '\'daily\': one file per UTC day of the sightings\' time, DIR/board=<node>/day=<YYYY-MM-DD>/sightings.<csv|jsonl> (needs --dir; docs/trial.md, "Many boards").' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" dir' -l 'dir' -d 'Directory of the daily layout (with --split daily); files of days already there are replaced.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl sightings export" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl mark" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl mark" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl mark" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl mark" label' -l 'label' -d 'What holds from now on (e.g. \'seated 1.5 m\').' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl mark" distance' -l 'distance' -d 'Distance in metres (omit: unknown).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl mark" note' -l 'note' -d 'Free note.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl mark" time' -l 'time' -d 'Time of the marker, Unix seconds or ISO 8601 (default: now on the node\'s clock).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl mark" json' -l 'json' -d 'Print JSON: {"id"}.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl mark" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl markers" -eq 1' -fa 'export' -d 'Export the node\'s markers as CSV: time,label,distance,note,node,site (docs/sightings-format.md).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" o' -s 'o' -d 'Output file (default: standard output).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" from' -l 'from' -d 'Start of the range, Unix seconds or ISO 8601 such as 2026-11-20T08:00:00Z (default: 0).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" to' -l 'to' -d 'End of the range, Unix seconds or ISO 8601 (default: far future).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" config' -l 'config' -d 'Take the node and site labels from this YAML config instead of gaend\'s.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" node' -l 'node' -d 'Node label (default: gaend\'s research.node).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" site' -l 'site' -d 'Site label (default: gaend\'s research.site).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl markers export" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl risk" -eq 1' -fa 'cwa' -d 'Corona-Warn-App exposure-window risk calculation (CWA 1.9+ parameters, every generation).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl risk" -eq 1' -fa 'nhs' -d 'NHS COVID-19 app scoring: v2 (unscented Kalman smoother) or its v1 fallback.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl risk" -eq 1' -fa 'gaen-v1' -d 'The framework\'s v1 risk score (product of level values) and attenuation-duration buckets.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl risk" -eq 1' -fa 'cwa-v1' -d 'The Corona-Warn-App\'s original method (before CWA 1.5), framework v1 names.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl risk" -eq 1' -fa 'swisscovid' -d 'SwissCovid\'s rule: weighted minutes per day below two attenuation thresholds.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl risk" -eq 1' -fa 'immuni' -d 'Immuni\'s rule: the framework\'s v1 risk score under Immuni\'s exposure configuration.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa" parameters' -l 'parameters' -d 'CWA risk calculation parameters (the app\'s field names), JSON.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa" app-version' -l 'app-version' -d 'The app version whose calculation to use, e.g. 1.9, 1.15, 2.19 (default: see above).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa" windows' -l 'windows' -d 'Exposure windows: a JSON array in the Android API shape.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa" per-window' -l 'per-window' -d 'Print the engine\'s verdict on every window too: {"result": ..., "windows": [...]}.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa" today' -l 'today' -d 'The day the calculation runs on, YYYY-MM-DD (default: today, UTC).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk nhs" configuration' -l 'configuration' -d 'The app\'s exposure configuration JSON.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk nhs" windows' -l 'windows' -d 'Exposure windows: a JSON array in the Android API shape.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk nhs" per-window' -l 'per-window' -d 'Print the engine\'s verdict on every window too: {"result": ..., "windows": [...]}.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk nhs" method' -l 'method' -d 'v2 or v1 (default: v2 when the configuration allows it).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk nhs" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk gaen-v1" configuration' -l 'configuration' -d 'Framework v1 configuration (minimumRiskScore, *LevelValues, attenuationDurationThresholds), JSON.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk gaen-v1" windows' -l 'windows' -d 'Exposure windows: a JSON array in the Android API shape.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk gaen-v1" per-window' -l 'per-window' -d 'Print the engine\'s verdict on every window too: {"result": ..., "windows": [...]}.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk gaen-v1" today' -l 'today' -d 'The day the calculation runs on, YYYY-MM-DD (default: today, UTC).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk gaen-v1" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa-v1" configuration' -l 'configuration' -d 'Configuration: framework v1 names plus attenuationDurationWeights, defaultBucketOffset, riskScoreNormalizationDivisor, increasedRiskMinutes.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa-v1" windows' -l 'windows' -d 'Exposure windows: a JSON array in the Android API shape.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa-v1" per-window' -l 'per-window' -d 'Print the engine\'s verdict on every window too: {"result": ..., "windows": [...]}.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa-v1" today' -l 'today' -d 'The day the calculation runs on, YYYY-MM-DD (default: today, UTC).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk cwa-v1" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk swisscovid" configuration' -l 'configuration' -d 'SwissCovid configuration JSON (default: the published one).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk swisscovid" windows' -l 'windows' -d 'Exposure windows: a JSON array in the Android API shape.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk swisscovid" per-window' -l 'per-window' -d 'Print the engine\'s verdict on every window too: {"result": ..., "windows": [...]}.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk swisscovid" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk immuni" configuration' -l 'configuration' -d 'Immuni exposure configuration JSON (default: the published one).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk immuni" windows' -l 'windows' -d 'Exposure windows: a JSON array in the Android API shape.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk immuni" per-window' -l 'per-window' -d 'Print the engine\'s verdict on every window too: {"result": ..., "windows": [...]}.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk immuni" today' -l 'today' -d 'The day the calculation runs on, YYYY-MM-DD (default: today, UTC).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl risk immuni" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl summaries" windows' -l 'windows' -d 'Exposure windows: a JSON array in the Android API shape (omit: ask gaend, GetDailySummaries).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl summaries" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl summaries" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl summaries" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl summaries" config' -l 'config' -d 'DailySummariesConfig as JSON.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl summaries" today' -l 'today' -d 'Reference day for daysSinceExposureThreshold, YYYY-MM-DD (default: today, UTC).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl summaries" json' -l 'json' -d 'Print JSON: an array of {daysSinceEpoch, date, summaryData, summaryDataPerReportType}.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl summaries" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl trial" -eq 1' -fa 'report' -d 'Match sightings against keys, join ground truth, fit the channel and write a report directory.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl trial" -eq 1' -fa 'import' -d 'Convert published trial data (DP-3T tables, Leith & Farrell datasets, histograms, raw RSSI tables) to the toolkit\'s formats.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl trial" -eq 1' -fa 'replay' -d 'Replay notification rules per contact against ground truth: true/false positives per rule.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report"' -l 'sightings' -d 'Sightings export files (CSV, or JSON lines as .jsonl).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report"' -l 'keys' -d 'JSON key lists of the transmitters, one file per transmitter.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report"' -l 'markers' -d 'Ground-truth markers CSV files (time,label,distance,note).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report"' -l 'attenuations' -d 'Attenuation files (CSV, or JSON lines as trial report --attenuation-format jsonl writes them), instead of --sightings and --keys.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report" o output' -s 'o' -l 'output' -d 'Report directory (created).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report" site' -l 'site' -d 'Site label of the report; rows of other sites are left out.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report" close-contact' -l 'close-contact' -d 'Ground truth close contact: distance at most this many metres.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report" thresholds' -l 'thresholds' -d 'Attenuation thresholds of the detection tables, comma-separated.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report" split' -l 'split' -d '\'daily\': attenuation rows as DIR/attenuation/board=<receiver>/day=<YYYY-MM-DD>/attenuation.csv instead of one attenuation.csv.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report" attenuation-format' -l 'attenuation-format' -d 'The attenuation rows as csv (attenuation.csv) or jsonl (attenuation.jsonl, JSON lines).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial report" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl trial import" -eq 1' -fa 'dp3t' -d 'DP-3T bt-measurements result tables (SQLite or CSV) to an attenuation CSV.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl trial import" -eq 1' -fa 'leith' -d 'Leith & Farrell\'s attenuation-duration datasets (their text files) to contacts.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl trial import" -eq 1' -fa 'histogram' -d 'Attenuation-duration histograms (CSV: label, distance, minutes per LOW-HIGH dB bin) to contacts.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_positional "gaenctl trial import" -eq 1' -fa 'rssi' -d 'Raw RSSI tables by range (MIT-LL style) to an attenuation CSV, with a constant TX power.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import dp3t" calibration' -l 'calibration' -d 'Google\'s EN calibration CSV (oem, model, rssi correction, tx, ...).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import dp3t" o output' -s 'o' -l 'output' -d 'Attenuation CSV to write.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import dp3t" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import leith" at' -l 'at' -d 'Where a range\'s minutes are placed: midpoint, low or high (edge).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import leith" transmission-risk-level' -l 'transmission-risk-level' -d 'Transmission risk level (1-8) of every window.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import leith" ranges' -l 'ranges' -d 'The attenuation ranges of the columns, when the file\'s comment does not name them.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import leith" o output' -s 'o' -l 'output' -d 'Contacts JSON to write.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import leith" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import histogram" at' -l 'at' -d 'Where a bin\'s minutes are placed: midpoint, low or high (edge).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import histogram" transmission-risk-level' -l 'transmission-risk-level' -d 'Transmission risk level (1-8) for rows without a transmission_risk_level column.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import histogram" o output' -s 'o' -l 'output' -d 'Contacts JSON to write.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import histogram" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import rssi" tx-power' -l 'tx-power' -d 'TX power of the transmitter, dBm (a constant: raw tables carry no AEM).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import rssi" distance-column' -l 'distance-column' -d 'Column holding the range/distance (default: range, else distance).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import rssi" rssi-column' -l 'rssi-column' -d 'Column holding the RSSI.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import rssi" distance-scale' -l 'distance-scale' -d 'Multiply ranges by this to get metres (e.g. 0.3048 for feet).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import rssi" receiver' -l 'receiver' -d 'Receiver name for rows without a receiver column.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import rssi" transmitter' -l 'transmitter' -d 'Transmitter name for rows without a transmitter column.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import rssi" o output' -s 'o' -l 'output' -d 'Attenuation CSV to write.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial import rssi" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial replay" contacts' -l 'contacts' -d 'Contacts JSON (trial import histogram writes it).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial replay"' -l 'rule' -d 'A rule to replay, NAME[=CONFIG]; repeatable.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial replay" close-contact' -l 'close-contact' -d 'Ground truth close contact: distance at most this many metres.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial replay" json' -l 'json' -d 'Print JSON instead of a table.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl trial replay" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl simulate" scenario' -l 'scenario' -d 'Scenario JSON file (see examples/scenarios).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl simulate" o output' -s 'o' -l 'output' -d 'Output directory (created).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl simulate" seed' -l 'seed' -d 'Seed of every random choice (overrides the scenario\'s); same seed, same output.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl simulate" random-keys' -l 'random-keys' -d 'Draw TEKs from the CSPRNG even when a seed is given.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl simulate" report' -l 'report' -d 'Also write the trial report of the simulated data into DIR/report.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl simulate" split' -l 'split' -d '\'daily\': sightings as DIR/sightings/board=<node>/day=<YYYY-MM-DD>/sightings.csv, one file per board per UTC day (the layout of sightings export --split daily).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl simulate" format' -l 'format' -d 'Sightings as csv or jsonl (JSON lines, docs/sightings-format.md).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl simulate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" bus' -l 'bus' -d 'gaend\'s bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" name' -l 'name' -d 'gaend\'s bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" timeout' -l 'timeout' -d 'Seconds to wait for each reply from gaend.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" live' -l 'live' -d 'Measure through the running gaend (its research interface).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" sightings' -l 'sightings' -d 'Sightings export recorded during the procedure (instead of --live).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" markers' -l 'markers' -d 'With --sightings: markers CSV, one marker per orientation, in order.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" reference-keys' -l 'reference-keys' -d 'JSON key list (or key file) of the reference transmitter: only its sightings count, its TX power is read from its AEMs.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" any-device' -l 'any-device' -d 'Count every GAEN sighting as the reference\'s (only in a shielded setup with no other device).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" expected-rssi' -l 'expected-rssi' -d 'RSSI a calibrated receiver reports for the reference at 1 m.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" reference-attenuation' -l 'reference-attenuation' -d 'Attenuation a calibrated receiver measures for the reference at 1 m.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" reference-tx-power' -l 'reference-tx-power' -d 'TX power the reference advertises (default: from its AEMs with --reference-keys).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" orientations' -l 'orientations' -d 'Orientations, comma-separated.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" min-samples' -l 'min-samples' -d 'Minimum readings per orientation.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" seconds-per-orientation' -l 'seconds-per-orientation' -d 'With --live: seconds to measure each orientation (longer, up to 5x, until --min-samples readings).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" tx-power' -l 'tx-power' -d 'TX power this board advertises, saved with the correction (default: keep the config\'s / the node\'s).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" calibration-confidence' -l 'calibration-confidence' -d 'Calibration confidence to save instead of the computed one: lowest, low, medium, high or 0-3.' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" config' -l 'config' -d 'gaend\'s YAML config: its calibration: block is updated (the file is created if missing).' -rfka ''
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" apply' -l 'apply' -d 'Also set the calibration on the running gaend at once (Research1.SetCalibration).'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" non-interactive' -l 'non-interactive' -d 'Do not prompt: with --live, consecutive spans per orientation; with --sightings, the recording as it comes.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" dry-run' -l 'dry-run' -d 'Print the result; write and apply nothing.'
complete -c 'gaenctl' -n '__gaenctl_should_offer_completions_for_flags_or_options "gaenctl calibrate" h help' -s 'h' -l 'help' -d 'Show help information.'
