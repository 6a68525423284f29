/* amp resume: the admin lifts a suspension or a Hallucination Lock. */
#include "ui/ui.h"

int main(int argc, char **argv)
{
	return amp_cli_control("resume",
		"usage: amp resume <task_id> --reason <text> [--from admin] [--agent <name>]\n"
		"       [--sync|--no-sync] [--json] [--repo <dir>]\n",
		argc, argv);
}
