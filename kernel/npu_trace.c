// SPDX-License-Identifier: GPL-2.0-only
/* The tracepoints' definitions (npu_trace.h), made once here. */
#define CREATE_TRACE_POINTS
#include "npu_trace.h"
