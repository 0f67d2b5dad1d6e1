// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_HRTIMER_SETUP: timers are set up with hrtimer_setup() (6.13+),
 * which replaces hrtimer_init() and the .function assignment. */
#include <linux/hrtimer.h>

static enum hrtimer_restart npu_probe_fn(struct hrtimer *t)
{
	return HRTIMER_NORESTART;
}

void npu_probe(struct hrtimer *t);
void npu_probe(struct hrtimer *t)
{
	hrtimer_setup(t, npu_probe_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
}
