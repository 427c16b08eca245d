function __gaend_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __gaend_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __gaend_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __gaend_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __gaend_parse_tokens -S
    set -l unparsed_tokens (__gaend_tokens -pc)
    switch $unparsed_tokens[1]
    case 'gaend'
        __gaend_parse_subcommand 0 'config=' 'check-controller' 'controller=' 'state-dir=' 'store-key-file=' 'bus=' 'bus-name=' 'trust=+' 'trial' 'time-scale=' 'trial-clock=' 'ignore-clock-sync' 'capture=' 'log-level=' 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'help'
            __gaend_parse_subcommand -r 1 'version'
        end
    end
end

function __gaend_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __gaend_parse_subcommand -S -a positional_count
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

function __gaend_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __gaend_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__gaend_tokens -p)
    if test -z "$(__gaend_tokens -t)"
        set -l index (count (__gaend_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'gaend' -f
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" config' -l 'config' -d 'YAML config file (gaend.conf(5)); without it /etc/gaend/gaend.conf if present, else built-in defaults.' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" check-controller' -l 'check-controller' -d 'Only check whether the config\'s `controllers:` gives --controller to gaend: exit 0 if so, 1 if it stays with bluetoothd, 255 if the config cannot be used (gaend@.service\'s ExecCondition: skipped on 1, failed on 255).'
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" controller' -l 'controller' -d 'Controller: hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT, unix:PATH.' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" state-dir' -l 'state-dir' -d 'State directory holding the store.' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" store-key-file' -l 'store-key-file' -d 'The store\'s 32-byte key file (default: the systemd credential store-key).' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" bus' -l 'bus' -d 'D-Bus: system, session, or a D-Bus address.' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" bus-name' -l 'bus-name' -d 'Well-known D-Bus name to own (default org.gaend; one per controller, e.g. org.gaend.hci0).' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend"' -l 'trust' -d 'Trust a P-256 public key for provided key files; repeatable.' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" trial' -l 'trial' -d 'Field-trial mode: research interface on, today\'s key exportable, rate limits off.'
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" time-scale' -l 'time-scale' -d 'Run the whole schedule N times faster than real time (demos, tests): 1...100000.' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" trial-clock' -l 'trial-clock' -d 'A rehearsal\'s trial clock file (scale and epoch, docs/runbook.md): the node runs on the trial\'s time, which every process of the trial and this node after a restart read alike. Not with --time-scale.' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" ignore-clock-sync' -l 'ignore-clock-sync' -d 'Advertise and scan without a synchronised system clock.'
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" capture' -l 'capture' -d 'Write every HCI packet, both directions, to FILE as btsnoop (btmon -r, Wireshark); rotated to FILE.1 at 16 MiB.' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" log-level' -l 'log-level' -d 'Log level: trace, debug, info, notice, warning, error, critical.' -rfka ''
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" version' -l 'version' -d 'Show the version.'
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'gaend' -n '__gaend_should_offer_completions_for_positional "gaend" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'gaend' -n '__gaend_should_offer_completions_for_flags_or_options "gaend help" version' -l 'version' -d 'Show the version.'
