/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `fencelock completion bash|zsh`: the shell completion scripts, written from the command
 * table and the option tables (table.c, cli.h), so that they offer exactly the subcommands,
 * operations and options the parser accepts. The scripts hold data (which words are commands,
 * which options take how many values, which values are files) and one small walker each, the
 * same logic in both shells: skip the global options and their values to find the command,
 * count its positionals, then offer options, operations, command names (help), files (a FILE
 * value, snapshot save FILE) or, after `--` of lock/sem/elect, the commands on $PATH.
 * Nothing is allocated; everything goes to stdout.
 */
#include <string.h>

#include "cli/cli.h"

static const char usage_completion[] =
    "usage: fencelock completion bash|zsh\n"
    "Print the completion script for bash or zsh. Try it in the current shell:\n"
    "  source <(fencelock completion bash)\n"
    "  source <(fencelock completion zsh)\n"
    "Installed: the Debian package (and make install) put them where the shells look:\n"
    "/usr/share/bash-completion/completions/fencelock and\n"
    "/usr/share/zsh/vendor-completions/_fencelock.\n";

/* Every option of a table, as "--name" (and "-x"), space-separated. */
static void put_names(const struct opt_spec *o)
{
    for (; o && o->name; o++) {
        printf(" --%s", o->name);
        if (o->letter)
            printf(" -%c", o->letter);
    }
}

static int takes_file(const struct opt_spec *o)
{
    return o->arg && strstr(o->arg, "FILE") != NULL;
}

/* The case patterns "CMD:--opt|CMD:-x" ("*" for the global table) of the options of `o` for
 * which want(o) holds; returns how many. */
static int put_patterns(const char *cmd, const struct opt_spec *o, int (*want)(const void *o),
                        int *first)
{
    int n = 0;
    for (; o && o->name; o++) {
        if (!want(o))
            continue;
        printf("%s%s:--%s", *first ? "" : "|", cmd, o->name);
        *first = 0;
        if (o->letter)
            printf("|%s:-%c", cmd, o->letter);
        n++;
    }
    return n;
}

static int nargs_is_1(const void *p)
{
    return ((const struct opt_spec *)p)->nargs == 1;
}

static int nargs_is_2(const void *p)
{
    return ((const struct opt_spec *)p)->nargs == 2;
}

static int is_file(const void *p)
{
    return takes_file(p);
}

/* One `case` arm per predicate over every table: "pat|pat) body ;;" (none if no option). */
static void put_arm(int (*want)(const void *o), const char *body)
{
    int first = 1, n = put_patterns("*", cli_global_opts, want, &first);
    for (size_t i = 0; i < cli_n_commands; i++)
        n += put_patterns(cli_commands[i].name, cli_commands[i].opts, want, &first);
    if (n)
        printf(") %s ;;\n", body);
}

static void put_commands(void)
{
    for (size_t i = 0; i < cli_n_commands; i++)
        printf("%s%s", i ? " " : "", cli_commands[i].name);
}

/* The lines "CMD) VAR='...' ;;" of a case over the command name. */
static void put_per_command(const char *var, int what)
{
    for (size_t i = 0; i < cli_n_commands; i++) {
        const struct cli_command *k = &cli_commands[i];
        printf("    %s) %s='", k->name, var);
        if (what == 0)
            put_names(k->opts);
        else if (what == 1 && k->ops)
            fputs(k->ops, stdout);
        else if (what == 2)
            printf("%d", k->flags);
        fputs("' ;;\n", stdout);
    }
}

/* The data both scripts share, as shell functions of the same names and meaning:
 *   _fencelock_nargs CMD:OPT  how many values OPT takes under CMD (0 for a flag or unknown)
 *   _fencelock_isfile CMD:OPT true if OPT's value is a file
 *   _fencelock_data CMD       sets opts (CMD's options then the global ones), ops (its
 *                             operations, "@commands" for help) and flags (1: runs a
 *                             command after --, 2: a file after the operation) */
static void put_data(void)
{
    printf("_fencelock_commands='");
    put_commands();
    printf("'\n\n_fencelock_nargs() {\n    case $1 in\n    ");
    put_arm(nargs_is_2, "echo 2");
    printf("    ");
    put_arm(nargs_is_1, "echo 1");
    printf("    *) echo 0 ;;\n    esac\n}\n\n_fencelock_isfile() {\n    case $1 in\n    ");
    put_arm(is_file, "return 0");
    printf("    *) return 1 ;;\n    esac\n}\n\n");
    printf("_fencelock_data() {\n    opts= ops= flags=0\n    case $1 in\n");
    put_per_command("opts", 0);
    printf("    esac\n    case $1 in\n");
    put_per_command("ops", 1);
    printf("    esac\n    case $1 in\n");
    put_per_command("flags", 2);
    printf("    esac\n    opts=\"$opts");
    put_names(cli_global_opts);
    printf("\"\n}\n\n");
}

/* The walker, in the syntax both shells read (zsh with KSH_ARRAYS off: words from 1). It sets
 * cmd, npos (positionals after the command), dd (the index of "--", 0 if none), optword (the
 * option whose value is being typed, "" if none) from words[first..cur-1]. */
static void put_walker(const char *fn, const char *words, int first)
{
    printf("%s() {\n"
           "    local i w skip=0\n"
           "    cmd= npos=0 dd=0 optword=\n"
           "    for ((i = %d; i < cur; i++)); do\n"
           "        w=${%s[i]}\n"
           "        [[ $w == '=' ]] && continue\n"
           "        if ((skip > 0)); then skip=$((skip - 1)); continue; fi\n"
           "        optword=\n"
           "        if ((dd)); then npos=$((npos + 1)); continue; fi\n"
           "        case $w in\n"
           "        --) [[ -n $cmd ]] && dd=$i; continue ;;\n"
           "        -?*) if [[ $w != *=* ]]; then\n"
           "                skip=$(_fencelock_nargs \"${cmd:-*}:$w\")\n"
           "                [[ $skip == 0 ]] && skip=$(_fencelock_nargs \"*:$w\")\n"
           "                ((skip > 0)) && optword=$w\n"
           "            fi\n"
           "            continue ;;\n"
           "        esac\n"
           "        if [[ -z $cmd ]]; then cmd=$w; else npos=$((npos + 1)); fi\n"
           "    done\n"
           "    ((skip > 0)) || optword=\n"
           "}\n\n",
           fn, first, words);
}

static void put_bash(void)
{
    printf("# bash completion for fencelock, made by `fencelock completion bash` from the\n"
           "# CLI's own command and option tables. Load: source <(fencelock completion bash)\n\n");
    put_data();
    put_walker("_fencelock_walk", "COMP_WORDS", 1);
    printf(
        "_fencelock() {\n"
        "    local cur=$COMP_CWORD word=${COMP_WORDS[COMP_CWORD]} cmd npos dd optword opts ops "
        "flags\n"
        "    COMPREPLY=()\n"
        "    [[ $word == '=' ]] && word=\n"
        "    _fencelock_walk\n"
        "    if [[ -n $optword ]]; then\n"
        "        if _fencelock_isfile \"${cmd:-*}:$optword\" || _fencelock_isfile \"*:$optword\"; "
        "then\n"
        "            compopt -o filenames 2>/dev/null\n"
        "            COMPREPLY=($(compgen -f -- \"$word\"))\n"
        "        fi\n"
        "        return 0\n"
        "    fi\n"
        "    _fencelock_data \"$cmd\"\n"
        "    if ((dd)); then\n"
        "        if ((flags & 1)); then\n"
        "            if ((cur == dd + 1)); then COMPREPLY=($(compgen -c -- \"$word\"))\n"
        "            else compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "
        "\"$word\")); fi\n"
        "        fi\n"
        "        return 0\n"
        "    fi\n"
        "    if [[ $word == -* ]]; then\n"
        "        COMPREPLY=($(compgen -W \"$opts\" -- \"$word\"))\n"
        "    elif [[ -z $cmd ]]; then\n"
        "        COMPREPLY=($(compgen -W \"$_fencelock_commands\" -- \"$word\"))\n"
        "    elif ((npos == 0)) && [[ $ops == @commands ]]; then\n"
        "        COMPREPLY=($(compgen -W \"$_fencelock_commands\" -- \"$word\"))\n"
        "    elif ((npos == 0)) && [[ -n $ops ]]; then\n"
        "        COMPREPLY=($(compgen -W \"$ops\" -- \"$word\"))\n"
        "    elif ((npos == 1 && (flags & 2))); then\n"
        "        compopt -o filenames 2>/dev/null\n"
        "        COMPREPLY=($(compgen -f -- \"$word\"))\n"
        "    fi\n"
        "    return 0\n"
        "}\n\n"
        "complete -F _fencelock fencelock\n");
}

static void put_zsh(void)
{
    printf("#compdef fencelock\n"
           "# zsh completion for fencelock, made by `fencelock completion zsh` from the CLI's own\n"
           "# command and option tables. Load: source <(fencelock completion zsh), or put it in\n"
           "# a directory of $fpath as _fencelock.\n\n");
    put_data();
    put_walker("_fencelock_walk", "words", 2);
    printf("_fencelock() {\n"
           "    local cur=$CURRENT word=${words[CURRENT]} cmd npos dd optword opts ops flags\n"
           "    _fencelock_walk\n"
           "    if [[ -n $optword ]]; then\n"
           "        if _fencelock_isfile \"${cmd:-*}:$optword\" || _fencelock_isfile "
           "\"*:$optword\"; then\n"
           "            _files\n"
           "        fi\n"
           "        return 0\n"
           "    fi\n"
           "    _fencelock_data \"$cmd\"\n"
           "    if ((dd)); then\n"
           "        if ((flags & 1)); then\n"
           "            if ((cur == dd + 1)); then _command_names -e; else _files; fi\n"
           "        fi\n"
           "        return 0\n"
           "    fi\n"
           "    if [[ $word == -* ]]; then\n"
           "        compadd -- ${=opts}\n"
           "    elif [[ -z $cmd ]]; then\n"
           "        compadd -- ${=_fencelock_commands}\n"
           "    elif ((npos == 0)) && [[ $ops == @commands ]]; then\n"
           "        compadd -- ${=_fencelock_commands}\n"
           "    elif ((npos == 0)) && [[ -n $ops ]]; then\n"
           "        compadd -- ${=ops}\n"
           "    elif ((npos == 1 && (flags & 2))); then\n"
           "        _files\n"
           "    fi\n"
           "    return 0\n"
           "}\n\n"
           "if [[ $funcstack[1] == _fencelock ]]; then\n"
           "    _fencelock \"$@\"\n"
           "else\n"
           "    compdef _fencelock fencelock\n"
           "fi\n");
}

int cli_cmd_completion(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int id, r;
    sub_start(&a, argc, argv, 1, usage_completion);
    while ((r = sub_next(c, &a, NULL, &id)) == SUB_OPT)
        ;
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos != 1)
        return sub_usage(&a);
    if (strcmp(a.pos[0], "bash") == 0)
        put_bash();
    else if (strcmp(a.pos[0], "zsh") == 0)
        put_zsh();
    else
        return sub_err(&a, "unknown shell '%s' (bash or zsh)", a.pos[0]);
    return EXIT_OK;
}
