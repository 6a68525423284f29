/* amp approve: the admin approves a dispatch whose risk level needs it. */
#include "ui/ui.h"

int main(int argc, char **argv)
{
	return amp_cli_control("approve",
		"usage: amp approve <task_id> [--reason <text>] [--from admin] [--agent <name>]\n"
		"       [--sync|--no-sync] [--json] [--repo <dir>]\n"
		"Approves the task's dispatch that awaits the admin (its risk_level is in\n"
		"git config amp.approvalRequired, default high): the executor may then ACK it.\n",
		argc, argv);
}
