/* amp abort: the admin or the coordinator ends a task. */
#include "ui/ui.h"

int main(int argc, char **argv)
{
	return amp_cli_control("abort",
		"usage: amp abort <task_id> --reason <text> [--from admin|coordinator] [--agent <name>]\n"
		"       [--sync|--no-sync] [--json] [--repo <dir>]\n"
		"After it, every write to the task but the admin's is refused.\n",
		argc, argv);
}
