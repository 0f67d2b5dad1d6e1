// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_PCIM_IOMAP_REGION: the per-BAR managed mapping call (6.11+). */
#include <linux/pci.h>

void __iomem *npu_probe(struct pci_dev *pdev);
void __iomem *npu_probe(struct pci_dev *pdev)
{
	return pcim_iomap_region(pdev, 0, "probe");
}
