/* amp heartbeat: an agent says it is alive on a task. */
#include "ui/ui.h"

int main(int argc, char **argv)
{
	return amp_cli_control("heartbeat",
		"usage: amp heartbeat <task_id> [--note <text>] [--from coordinator|executor|reviewer] [--agent <name>]\n"
		"       [--sync|--no-sync] [--json] [--repo <dir>]\n"
		"Resets amp watch's heartbeat_timeout for the writing holder of the task (git config amp.heartbeatTimeout).\n",
		argc, argv);
}
