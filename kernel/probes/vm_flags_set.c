// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_VM_FLAGS_SET: vm_flags is changed through vm_flags_set() (6.3+). */
#include <linux/mm.h>

void npu_probe(struct vm_area_struct *vma);
void npu_probe(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_IO);
}
