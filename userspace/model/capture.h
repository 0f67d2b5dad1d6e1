/* SPDX-License-Identifier: MIT */
/*
 * Internal: the model layer's side of the runtime's hooks (runtime/hooks.h):
 * stream capture (capture.c) and unloading a closing device's models
 * (model.c).
 */
#ifndef NPURT_CAPTURE_H
#define NPURT_CAPTURE_H

#include "hooks.h"

/* The device's calls go to the model layer from now on (idempotent). */
void npurt_model_hooks_install(npurt_device *dev);

#endif /* NPURT_CAPTURE_H */
