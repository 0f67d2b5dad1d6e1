// SPDX-License-Identifier: MIT
/*
 * A JSON reader for trace-event files: strict about JSON (RFC 8259: one
 * value, strings, numbers, literals, nesting up to 64), and keeping of
 * the trace-event format what npu-prof and the tests look at. Both
 * forms of the format are read: an object with "traceEvents", or a bare
 * array of events.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define DEPTH_MAX	64

struct parser {
	const char *s, *start, *end;
	char *err;
	size_t errlen;
	bool failed;
};

static int fail(struct parser *p, const char *what)
{
	if (!p->failed)
		snprintf(p->err, p->errlen, "byte %zu: %s", (size_t)(p->s - p->start), what);
	p->failed = true;
	return -1;
}

static void ws(struct parser *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static bool eat(struct parser *p, char c)
{
	ws(p);
	if (p->s < p->end && *p->s == c) {
		p->s++;
		return true;
	}
	return false;
}

static int hex4(struct parser *p, unsigned int *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++, p->s++) {
		char c = p->s < p->end ? *p->s : 0;

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (unsigned int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (unsigned int)(c - 'A' + 10);
		else
			return fail(p, "bad \\u escape");
	}
	return 0;
}

/* A string into out (cut to outlen - 1 bytes; out may be NULL). */
static int string(struct parser *p, char *out, size_t outlen)
{
	size_t n = 0;

	if (!eat(p, '"'))
		return fail(p, "a string expected");
	for (;;) {
		unsigned int c;

		if (p->s >= p->end)
			return fail(p, "unterminated string");
		c = (unsigned char)*p->s++;
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(p, "control character in a string");
		if (c == '\\') {
			char e = p->s < p->end ? *p->s++ : 0;

			switch (e) {
			case '"': case '\\': case '/': c = (unsigned char)e; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u':
				if (hex4(p, &c))
					return -1;
				if (c >= 0x80)
					c = '?';	/* names here are ASCII */
				else if (!c)
					return fail(p, "\\u0000 in a string");
				break;
			default:
				return fail(p, "bad escape");
			}
		}
		if (out && n + 1 < outlen)
			out[n++] = (char)c;
	}
	if (out && outlen)
		out[n] = 0;
	return 0;
}

static int number(struct parser *p, double *v)
{
	const char *q = p->s;
	char buf[64], *endp;

	if (q < p->end && *q == '-')
		q++;
	if (q >= p->end || *q < '0' || *q > '9')
		return fail(p, "a value expected");
	if (*q == '0' && q + 1 < p->end && q[1] >= '0' && q[1] <= '9')
		return fail(p, "a number with a leading zero");
	while (q < p->end && *q && strchr("0123456789+-.eE", *q))
		q++;
	if ((size_t)(q - p->s) >= sizeof(buf))
		return fail(p, "a number too long");
	memcpy(buf, p->s, (size_t)(q - p->s));
	buf[q - p->s] = 0;
	*v = strtod(buf, &endp);
	if (*endp || endp == buf || endp[-1] == '.' || strstr(buf, ".e") || strstr(buf, ".E"))
		return fail(p, "a malformed number");
	/* Kept fields become integers: none past what they hold. */
	if (!isfinite(*v) || *v > 9.2e18 || *v < -9.2e18)
		return fail(p, "a number out of range");
	p->s = q;
	return 0;
}

static int literal(struct parser *p, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n))
		return fail(p, "a value expected");
	p->s += n;
	return 0;
}

/* Any value, checked and passed over. */
static int value(struct parser *p, int depth)
{
	double d;

	if (depth > DEPTH_MAX)
		return fail(p, "nested too deep");
	ws(p);
	if (p->s >= p->end)
		return fail(p, "a value expected");
	switch (*p->s) {
	case '{':
		p->s++;
		if (eat(p, '}'))
			return 0;
		do {
			if (string(p, NULL, 0) || (!eat(p, ':') && fail(p, "':' expected")) ||
			    value(p, depth + 1))
				return -1;
		} while (eat(p, ','));
		return eat(p, '}') ? 0 : fail(p, "'}' expected");
	case '[':
		p->s++;
		if (eat(p, ']'))
			return 0;
		do {
			if (value(p, depth + 1))
				return -1;
		} while (eat(p, ','));
		return eat(p, ']') ? 0 : fail(p, "']' expected");
	case '"':
		return string(p, NULL, 0);
	case 't':
		return literal(p, "true");
	case 'f':
		return literal(p, "false");
	case 'n':
		return literal(p, "null");
	default:
		return number(p, &d);
	}
}

/* A number, or (for a kept field of another type) any value. */
static int keep_number(struct parser *p, double *v, bool *has)
{
	ws(p);
	if (p->s < p->end && (*p->s == '-' || (*p->s >= '0' && *p->s <= '9'))) {
		if (has)
			*has = true;
		return number(p, v);
	}
	return value(p, 1);
}

static int keep_string(struct parser *p, char *out, size_t len)
{
	ws(p);
	if (p->s < p->end && *p->s == '"')
		return string(p, out, len);
	return value(p, 1);
}

/* An event's "args": what npurt_profiler_write() puts there. */
static int args(struct parser *p, struct trace_event *e)
{
	char key[32];
	double d;

	ws(p);
	if (p->s >= p->end || *p->s != '{')
		return value(p, 2);
	p->s++;
	if (eat(p, '}'))
		return 0;
	do {
		bool has = false;
		int r;

		if (string(p, key, sizeof(key)) || (!eat(p, ':') && fail(p, "':' expected")))
			return -1;
		if (!strcmp(key, "name"))
			r = keep_string(p, e->thread, sizeof(e->thread));
		else if (!strcmp(key, "type"))
			r = keep_string(p, e->type, sizeof(e->type));
		else if (!strcmp(key, "call"))
			r = keep_string(p, e->call, sizeof(e->call));
		else if (!strcmp(key, "batch") || !strcmp(key, "list_task"))
			r = keep_number(p, &d, &has);
		else
			r = value(p, 3);
		if (!r && has && key[0] == 'b')
			e->batch = (long long)d;
		else if (!r && has)
			e->list_task = (long long)d;
		if (r)
			return -1;
	} while (eat(p, ','));
	return eat(p, '}') ? 0 : fail(p, "'}' expected");
}

static int event(struct parser *p, struct trace_event *e)
{
	char key[16], ph[8] = "";
	double d = 0;

	memset(e, 0, sizeof(*e));
	e->batch = e->list_task = -1;
	e->pid = e->tid = -1;
	if (!eat(p, '{'))
		return fail(p, "an event is an object");
	if (eat(p, '}'))
		return fail(p, "an event without \"ph\"");
	do {
		int r;

		if (string(p, key, sizeof(key)) || (!eat(p, ':') && fail(p, "':' expected")))
			return -1;
		if (!strcmp(key, "ph")) {
			r = keep_string(p, ph, sizeof(ph));
		} else if (!strcmp(key, "name")) {
			r = keep_string(p, e->name, sizeof(e->name));
		} else if (!strcmp(key, "ts")) {
			r = keep_number(p, &e->ts, &e->has_ts);
		} else if (!strcmp(key, "dur")) {
			r = keep_number(p, &e->dur, &e->has_dur);
		} else if (!strcmp(key, "pid") || !strcmp(key, "tid") || !strcmp(key, "id")) {
			bool has = false;

			r = keep_number(p, &d, &has);
			if (!r && has && key[0] == 'p')
				e->pid = (long)d;
			else if (!r && has && key[0] == 't')
				e->tid = (long)d;
			else if (!r && has)
				e->id = (long long)d;
		} else if (!strcmp(key, "args")) {
			r = args(p, e);
		} else {
			r = value(p, 2);
		}
		if (r)
			return -1;
	} while (eat(p, ','));
	if (!eat(p, '}'))
		return fail(p, "'}' expected");
	if (strlen(ph) != 1)
		return fail(p, "an event without a one-letter \"ph\"");
	e->ph = ph[0];
	return 0;
}

static int events(struct parser *p, struct trace *t)
{
	size_t cap = t->n;

	if (!eat(p, '['))
		return fail(p, "\"traceEvents\" is an array");
	if (eat(p, ']'))
		return 0;
	do {
		if (t->n == cap) {
			struct trace_event *ev = realloc(t->ev, (cap ? 2 * cap : 1024) * sizeof(*ev));

			if (!ev)
				return fail(p, "out of memory");
			t->ev = ev;
			cap = cap ? 2 * cap : 1024;
		}
		ws(p);
		if (event(p, &t->ev[t->n]))
			return -1;
		t->n++;
	} while (eat(p, ','));
	return eat(p, ']') ? 0 : fail(p, "']' expected");
}

static int other(struct parser *p, struct trace *t)
{
	char key[32];
	double d;

	ws(p);
	if (p->s >= p->end || *p->s != '{')
		return value(p, 1);
	p->s++;
	if (eat(p, '}'))
		return 0;
	do {
		bool has = false;

		if (string(p, key, sizeof(key)) || (!eat(p, ':') && fail(p, "':' expected")) ||
		    keep_number(p, &d, &has))
			return -1;
		if (has && !strcmp(key, "records"))
			t->records = (long long)d;
		else if (has && !strcmp(key, "dropped"))
			t->dropped = (long long)d;
	} while (eat(p, ','));
	return eat(p, '}') ? 0 : fail(p, "'}' expected");
}

static int top(struct parser *p, struct trace *t)
{
	char key[32];
	bool seen = false;

	ws(p);
	if (p->s < p->end && *p->s == '[')
		return events(p, t);
	if (!eat(p, '{'))
		return fail(p, "a trace is an object or an array");
	if (!eat(p, '}')) {
		do {
			int r;

			if (string(p, key, sizeof(key)) || (!eat(p, ':') && fail(p, "':' expected")))
				return -1;
			if (!strcmp(key, "traceEvents")) {
				r = events(p, t);
				seen = true;
			} else if (!strcmp(key, "otherData")) {
				r = other(p, t);
			} else {
				r = value(p, 1);
			}
			if (r)
				return -1;
		} while (eat(p, ','));
		if (!eat(p, '}'))
			return fail(p, "'}' expected");
	}
	return seen ? 0 : fail(p, "no \"traceEvents\"");
}

static int gather_threads(struct trace *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += t->ev[i].ph == 'M' && !strcmp(t->ev[i].name, "thread_name");
	t->threads = malloc((n ? n : 1) * sizeof(*t->threads));
	if (!t->threads)
		return -1;
	for (size_t i = 0; i < t->n; i++)
		if (t->ev[i].ph == 'M' && !strcmp(t->ev[i].name, "thread_name"))
			t->threads[t->nthreads++] = i;
	return 0;
}

int trace_read(const char *path, struct trace *t, char *err, size_t errlen)
{
	struct parser p = { .err = err, .errlen = errlen };
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long size;
	int ret = -1;

	memset(t, 0, sizeof(*t));
	t->records = t->dropped = -1;
	if (!f) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		snprintf(err, errlen, "%s", strerror(errno));
		goto out;
	}
	buf = malloc((size_t)size + 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		snprintf(err, errlen, "%s", buf ? "cannot read it" : "out of memory");
		goto out;
	}
	p.s = p.start = buf;
	p.end = buf + size;
	if (!top(&p, t)) {
		ws(&p);
		ret = p.s == p.end ? 0 : fail(&p, "more after the trace");
	}
	if (!ret && gather_threads(t))
		ret = fail(&p, "out of memory");
out:
	free(buf);
	fclose(f);
	if (ret)
		trace_free(t);
	return ret;
}

void trace_free(struct trace *t)
{
	free(t->ev);
	free(t->threads);
	t->ev = NULL;
	t->threads = NULL;
	t->n = t->nthreads = 0;
}

const char *trace_thread_name(const struct trace *t, long pid, long tid)
{
	/* The "M" events, gathered once: a summary asks for every slice. */
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct trace_event *e = &t->ev[t->threads[i]];

		if (e->pid == pid && e->tid == tid)
			return e->thread;
	}
	return NULL;
}

