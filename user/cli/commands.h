/* heaptrace's commands; main() picks one by its first word (trace when there is none). */
#ifndef HT_COMMANDS_H
#define HT_COMMANDS_H

/* Each takes the command's own argv (argv[0] is its name) and returns the exit status. */
int cmd_trace(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* Their option tables, for `heaptrace --dump-options` (the man page and completion are built from it). */
struct command_opts;
extern const struct command_opts trace_command, diff_command;

#endif
