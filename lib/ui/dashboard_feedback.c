/*
 * dashboard_feedback.c - what the team reports on a task's page of the
 * dashboard (issue 33): the latest progress report of each executor
 * instance and subtask (percent, note, who, when; protocol/progress.h),
 * and the clarification questions with their answers, deadlines and
 * acknowledgements (protocol/question.h).  Every text is data, escaped.
 */
#include <stdio.h>

#include "protocol/protocol.h"
#include "dashboard_int.h"

#define str dash_str

/* A table cell holding text s (escaped), or a dash when absent. */
static void put_cell(FILE *f, const char *s)
{
	fputs("<td>", f);
	amp_html_put(f, s ? s : "-", 0);
	fputs("</td>", f);
}

static void put_progress(FILE *f, const json_t *reports)
{
	const json_t *r;
	size_t i;

	fputs("<h2>Progress</h2>\n<div class=\"wrap\"><table class=\"progress\"><tr><th>who</th>"
	      "<th>subtask</th><th>percent</th><th>note</th><th>when</th></tr>\n", f);
	json_array_foreach(reports, i, r) {
		fputs("<tr>", f);
		put_cell(f, str(r, "agent"));
		put_cell(f, str(r, "subtask_id"));
		fprintf(f, "<td>%lld%%</td>", dash_ival(r, "percent"));
		put_cell(f, str(r, "note"));
		put_cell(f, str(r, "timestamp"));
		fputs("</tr>\n", f);
	}
	fputs("</table></div>\n", f);
}

/* The state of question q in words: unanswered (answer due), or answered
 * and acknowledged or not (ACK due). */
static void put_question_state(FILE *f, const json_t *q)
{
	const json_t *a = json_object_get(q, "answer");

	fputs("<td>", f);
	if (!json_is_object(a)) {
		fputs("<span class=\"overdue\">unanswered</span>, answer due ", f);
		amp_html_put(f, str(q, "answer_due"), 0);
	} else if (str(a, "acked")) {
		fputs("answered, acknowledged ", f);
		amp_html_put(f, str(a, "acked"), 0);
	} else if (str(a, "ack_due")) {
		fputs("answered, acknowledgement due ", f);
		amp_html_put(f, str(a, "ack_due"), 0);
	} else {
		fputs("answered", f);
	}
	fputs("</td>", f);
}

static void put_questions(FILE *f, const json_t *questions)
{
	const json_t *q, *a;
	size_t i;

	fputs("<h2>Questions</h2>\n<div class=\"wrap\"><table class=\"questions\"><tr>"
	      "<th>question</th><th>asked by</th><th>subtask</th><th>asked</th><th>state</th>"
	      "<th>answer</th><th>answered by</th><th>answered</th></tr>\n", f);
	json_array_foreach(questions, i, q) {
		a = json_object_get(q, "answer");
		fputs("<tr>", f);
		put_cell(f, str(q, "question"));
		put_cell(f, str(q, "agent"));
		put_cell(f, str(q, "subtask_id"));
		put_cell(f, str(q, "asked"));
		put_question_state(f, q);
		put_cell(f, str(a, "answer"));
		put_cell(f, str(a, "agent") ? str(a, "agent") : str(a, "from"));
		put_cell(f, str(a, "timestamp"));
		fputs("</tr>\n", f);
	}
	fputs("</table></div>\n", f);
}

void dash_put_feedback(FILE *f, const amp_task_log *log)
{
	json_t *reports = amp_progress_json(log), *questions = amp_questions_json(log);

	if (json_array_size(reports))
		put_progress(f, reports);
	if (json_array_size(questions))
		put_questions(f, questions);
	json_decref(reports);
	json_decref(questions);
}
