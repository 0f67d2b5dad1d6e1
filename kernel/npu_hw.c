// SPDX-License-Identifier: GPL-2.0-only
/*
 * Device access: BAR mapping, the firmware signature, doorbells and MSI-X.
 *
 * The NPU sits behind a generic ivshmem-doorbell function (1af4:1110), a
 * PCI ID that other shared-memory users have too. npu_hw_check() is what
 * keeps us off those: we claim the function only if BAR2 starts with our
 * control block and an interface version we speak.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/io-64-nonatomic-lo-hi.h>

#include "npu_compat.h"
#include "npu_hw.h"

#define NPU_BAR_REGS		0
#define NPU_BAR_MEM		2
#define NPU_FW_BOOT_TIMEOUT_MS	1000

int npu_hw_check(struct pci_dev *pdev, void __iomem **regs,
		 struct npu_fw_ctrl __iomem **ctrlp)
{
	struct npu_fw_ctrl __iomem *ctrl;
	u32 magic, version;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;

	if (pci_resource_len(pdev, NPU_BAR_MEM) < NPU_FW_RESERVED_SIZE ||
	    !(pci_resource_flags(pdev, NPU_BAR_MEM) & IORESOURCE_MEM))
		return -ENODEV;

	*regs = npu_pcim_map_bar(pdev, NPU_BAR_REGS, NPU_DRIVER_NAME);
	if (IS_ERR(*regs))
		return PTR_ERR(*regs);
	ctrl = npu_pcim_map_bar(pdev, NPU_BAR_MEM, NPU_DRIVER_NAME);
	if (IS_ERR(ctrl))
		return PTR_ERR(ctrl);
	*ctrlp = ctrl;
	magic = readl(&ctrl->magic);
	if (magic != NPU_FW_MAGIC) {
		dev_dbg(&pdev->dev, "no NPU firmware signature (%#x), not ours\n",
			magic);
		return -ENODEV;
	}

	version = readl(&ctrl->if_version);
	if (NPU_FW_IF_VERSION_MAJOR(version) != NPU_FW_IF_MAJOR ||
	    NPU_FW_IF_VERSION_MINOR(version) < NPU_FW_IF_MINOR_MIN) {
		dev_warn(&pdev->dev,
			 "firmware interface %u.%u unsupported (driver speaks %u.%u+)\n",
			 NPU_FW_IF_VERSION_MAJOR(version),
			 NPU_FW_IF_VERSION_MINOR(version),
			 NPU_FW_IF_MAJOR, NPU_FW_IF_MINOR_MIN);
		return -ENODEV;
	}
	return 0;
}

u32 npu_hw_fw_state(struct npu_device *ndev)
{
	return readl(&ndev->ctrl->state);
}

u64 npu_hw_heartbeat(struct npu_device *ndev)
{
	return readq(&ndev->ctrl->heartbeat);
}

void npu_hw_doorbell(struct npu_device *ndev, unsigned int vector)
{
	/* Everything written to the control block lands before the ring. */
	wmb();
	writel(NPU_DOORBELL(ndev->fw.fw_peer, vector),
	       ndev->regs + NPU_REG_DOORBELL);
}

/*
 * A queue's tail moved: ring, unless the engine is awake and will look at
 * it anyway (notification suppression, see npu_fw_if.h).
 */
void npu_hw_queue_kick(struct npu_device *ndev)
{
	if (ndev->fw.caps & NPU_FW_CAP_NOTIFY_SUPPRESS) {
		/* The tail store is ordered before the engine_awake load. */
		mb();
		if (readl(&ndev->ctrl->engine_awake))
			return;
	}
	npu_hw_doorbell(ndev, NPU_VEC_QUEUE);
}

/*
 * About to read the queues' completion state: the device may raise the
 * next queue interrupt from here on.
 */
void npu_hw_queue_irq_ack(struct npu_device *ndev)
{
	if (!(ndev->fw.caps & NPU_FW_CAP_NOTIFY_SUPPRESS))
		return;
	writel(0, &ndev->ctrl->queue_irq_pending);
	/* The clear is ordered before the loads of done_seq and state. */
	mb();
}

static void npu_hw_irq_suppress_off(void *arg)
{
	struct npu_device *ndev = arg;

	/* Whoever binds next may not know the protocol. */
	writel(0, &ndev->ctrl->irq_suppress);
}

static int npu_hw_wait_ready(struct npu_device *ndev)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(NPU_FW_BOOT_TIMEOUT_MS);
	u32 state;

	for (;;) {
		state = npu_hw_fw_state(ndev);
		if (state == NPU_FW_STATE_READY)
			return 0;
		if (state == NPU_FW_STATE_HALTED) {
			npu_err(ndev, "firmware is halted\n");
			return -EIO;
		}
		if (time_after(jiffies, deadline)) {
			npu_err(ndev, "firmware not ready after %d ms (state %u)\n",
				NPU_FW_BOOT_TIMEOUT_MS, state);
			return -ETIMEDOUT;
		}
		msleep(20);
	}
}

static int npu_hw_read_fw_info(struct npu_device *ndev)
{
	struct npu_fw_ctrl __iomem *c = ndev->ctrl;
	struct npu_fw_info *fw = &ndev->fw;
	u64 bar_len = pci_resource_len(ndev->pdev, NPU_BAR_MEM);
	u64 hbm_offset;
	u32 vectors;

	fw->if_version = readl(&c->if_version);
	fw->fw_version = readl(&c->fw_version);
	fw->caps = readq(&c->caps);
	fw->fw_peer = readl(&c->fw_peer_id);
	fw->host_peer = readl(ndev->regs + NPU_REG_IVPOSITION);
	hbm_offset = readq(&c->hbm_offset);
	fw->hbm_size = readq(&c->hbm_size);
	fw->fw_reserved = readq(&c->fw_reserved);
	fw->num_queues = readl(&c->num_queues);
	fw->num_cores = readl(&c->num_cores);
	/* Zero from interface 2.0 firmware, which runs one of each. */
	fw->num_core_groups = max(readl(&c->num_core_groups), 1u);
	fw->num_dma_engines = max(readl(&c->num_dma_engines), 1u);
	fw->heartbeat_ms = readl(&c->heartbeat_period_ms);
	vectors = readl(&c->num_vectors);

	/* The firmware is another party: check what it claims. */
	if (hbm_offset != 0 || fw->hbm_size > bar_len ||
	    fw->fw_reserved < NPU_FW_RESERVED_SIZE ||
	    fw->fw_reserved >= fw->hbm_size) {
		npu_err(ndev, "bad memory layout: HBM %#llx+%#llx, reserved %#llx, BAR %#llx\n",
			hbm_offset, fw->hbm_size, fw->fw_reserved, bar_len);
		return -EINVAL;
	}
	if (vectors < NPU_FW_NUM_VECTORS || fw->fw_peer == fw->host_peer ||
	    fw->fw_peer > 0xffff || !fw->num_queues ||
	    fw->num_queues > NPU_FW_MAX_QUEUES) {
		npu_err(ndev, "bad firmware config: %u vectors, %u queues, peer %u (we are %u)\n",
			vectors, fw->num_queues, fw->fw_peer, fw->host_peer);
		return -EINVAL;
	}
	return 0;
}

static void npu_hw_free_vectors(void *pdev)
{
	pci_free_irq_vectors(pdev);
}

int npu_hw_init(struct npu_device *ndev)
{
	struct pci_dev *pdev = ndev->pdev;
	int ret;

	ret = npu_hw_wait_ready(ndev);
	if (ret)
		return ret;
	ret = npu_hw_read_fw_info(ndev);
	if (ret)
		return ret;
	ndev->hbm_phys = pci_resource_start(pdev, NPU_BAR_MEM);
	ndev->hbm = (void __iomem *)ndev->ctrl;

	/* Page-table entries carry 52-bit addresses; DMA must fit them. */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(52));
	if (ret) {
		npu_err(ndev, "no usable DMA mask: %d\n", ret);
		return ret;
	}
	/* MSI-X messages are memory writes by the device: they need mastering. */
	pci_set_master(pdev);
	ret = pci_alloc_irq_vectors(pdev, NPU_FW_NUM_VECTORS, NPU_FW_NUM_VECTORS,
				    PCI_IRQ_MSIX);
	if (ret < 0) {
		npu_err(ndev, "need %d MSI-X vectors: %d\n", NPU_FW_NUM_VECTORS, ret);
		return ret;
	}
	/*
	 * Some kernels free vectors of a pcim-enabled device by themselves,
	 * later ones leave it to the driver; freeing twice is harmless.
	 * Registered after the IRQ-vector allocation, and the IRQs are
	 * requested later, so they are freed before the vectors.
	 */
	ret = devm_add_action_or_reset(&pdev->dev, npu_hw_free_vectors, pdev);
	if (ret || !(ndev->fw.caps & NPU_FW_CAP_NOTIFY_SUPPRESS))
		return ret;
	writel(0, &ndev->ctrl->queue_irq_pending);
	writel(1, &ndev->ctrl->irq_suppress);
	return devm_add_action_or_reset(&pdev->dev, npu_hw_irq_suppress_off, ndev);
}
