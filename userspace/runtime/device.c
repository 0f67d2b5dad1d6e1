// SPDX-License-Identifier: MIT
/*
 * Device discovery and device information.
 *
 * An NPU is a DRM device whose kernel driver is "npu". On kernels without
 * the accel subsystem it is a render node, which libdrm enumerates; where
 * accel exists it is /dev/accel/accelN, which libdrm of this era does not
 * know, so those are found by scanning. Either way the driver name comes
 * from sysfs, so devices are counted even when the caller may not open
 * them (opening then fails with NPURT_ERR_PERMISSION, not "no device").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <xf86drm.h>

#include <drm/npu_accel.h>

#include "error.h"
#include "handle.h"
#include "hooks.h"
#include "internal.h"
#include "log.h"
#include "profile.h"

#define NPU_DRIVER	"npu"
#define MAX_NODES	64

/* Write the driver bound to `node`'s device into `drv`; -1 if none. */
static int node_driver(const char *cls, const char *node, char *drv, size_t len,
		       char *bus_id, size_t bus_len)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/%s/%s/device/driver", cls, node);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -1;
	target[n] = '\0';
	snprintf(drv, len, "%s", basename(target));

	snprintf(path, sizeof(path), "/sys/class/%s/%s/device", cls, node);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = '\0';
	snprintf(bus_id, bus_len, "%s", basename(target));
	return 0;
}

struct node {
	char path[64];
	char bus_id[32];
};

static int node_cmp(const void *a, const void *b)
{
	const struct node *x = a, *y = b;
	size_t lx = strlen(x->path), ly = strlen(y->path);

	/* renderD129 before renderD1000: shorter first, then by text. */
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->path, y->path);
}

static void add_node(struct node *nodes, int *n, const char *cls,
		     const char *path)
{
	char drv[64], bus_id[32] = "";
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (*n >= MAX_NODES ||
	    node_driver(cls, base, drv, sizeof(drv), bus_id, sizeof(bus_id)) ||
	    strcmp(drv, NPU_DRIVER))
		return;
	snprintf(nodes[*n].path, sizeof(nodes[*n].path), "%s", path);
	snprintf(nodes[*n].bus_id, sizeof(nodes[*n].bus_id), "%s", bus_id);
	(*n)++;
}

/* All NPU nodes, sorted. Returns the count. */
static int scan_nodes(struct node *nodes)
{
	drmDevicePtr devs[MAX_NODES];
	struct dirent *de;
	int n = 0, ndev;
	DIR *dir;

	ndev = drmGetDevices2(0, devs, MAX_NODES);
	for (int i = 0; i < ndev; i++) {
		if (devs[i]->available_nodes & (1 << DRM_NODE_RENDER))
			add_node(nodes, &n, "drm", devs[i]->nodes[DRM_NODE_RENDER]);
	}
	if (ndev > 0)
		drmFreeDevices(devs, ndev);

	dir = opendir("/dev/accel");
	while (dir && (de = readdir(dir))) {
		char path[64];

		if (strncmp(de->d_name, "accel", 5))
			continue;
		snprintf(path, sizeof(path), "/dev/accel/%.40s", de->d_name);
		add_node(nodes, &n, "accel", path);
	}
	if (dir)
		closedir(dir);

	qsort(nodes, n, sizeof(*nodes), node_cmp);
	return n;
}

npurt_status npurt_device_count(int *count)
{
	struct node nodes[MAX_NODES];

	if (!count)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "npurt_device_count: count is NULL");
	*count = scan_nodes(nodes);
	return NPURT_OK;
}

npurt_status npurt_device_open(int index, npurt_device **out)
{
	struct node nodes[MAX_NODES];
	npurt_device *dev;
	drmVersionPtr ver;
	npurt_status st;
	int n, fd, err;

	if (!out)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "npurt_device_open: dev is NULL");
	n = scan_nodes(nodes);
	if (index < 0 || index >= n)
		return npurt_set_error(NPURT_ERR_NO_DEVICE,
				       "npurt_device_open(%d): %d NPU device%s found "
				       "(is npu.ko loaded and the device bound?)",
				       index, n, n == 1 ? "" : "s");

	fd = open(nodes[index].path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		char hint[160] = "";

		err = errno;
		/* The group to join is the node's (npu, with the packages' udev rule). */
		if (err == EACCES) {
			struct group gr, *found = NULL;
			char buf[1024];
			struct stat sb;

			if (!stat(nodes[index].path, &sb) &&
			    !getgrgid_r(sb.st_gid, &gr, buf, sizeof(buf), &found) && found)
				snprintf(hint, sizeof(hint), " (join group '%s', which owns it, or "
					 "run as root)", found->gr_name);
			else
				snprintf(hint, sizeof(hint), " (run as root, or as a member of "
					 "the group owning it)");
		}
		return npurt_set_error(npurt_status_from_errno(err),
				       "npurt_device_open(%d): cannot open %s: %s%s",
				       index, nodes[index].path, strerror(err), hint);
	}

	/* The node could have been rebound between the scan and the open. */
	ver = drmGetVersion(fd);
	if (!ver || strcmp(ver->name, NPU_DRIVER)) {
		npurt_set_error(NPURT_ERR_NO_DEVICE,
				"npurt_device_open(%d): %s is driven by '%s', not npu",
				index, nodes[index].path, ver ? ver->name : "?");
		drmFreeVersion(ver);
		close(fd);
		return NPURT_ERR_NO_DEVICE;
	}
	drmFreeVersion(ver);

	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		close(fd);
		return npurt_set_error(NPURT_ERR_NO_MEMORY,
				       "npurt_device_open(%d): out of memory", index);
	}
	dev->fd = fd;
	memcpy(dev->node, nodes[index].path, sizeof(dev->node));
	memcpy(dev->bus_id, nodes[index].bus_id, sizeof(dev->bus_id));
	st = npurt_launch_open(dev, "npurt_device_open");
	if (!st)
		st = npurt_path_open(dev, "npurt_device_open");
	if (!st) {
		st = npurt_words_open(dev, "npurt_device_open");
		if (!st)
			st = npurt_memory_open(dev, "npurt_device_open");
		if (!st) {
			st = npurt_events_open(dev, "npurt_device_open");
			if (st)
				npurt_memory_close(dev);
		}
		if (st) {
			npurt_words_close(dev);
			npurt_path_close(dev);
		}
	}
	if (st) {
		close(fd);
		free(dev);
		return st;
	}
	npurt_notifies_open(dev);
	pthread_mutex_init(&dev->default_lock, NULL);
	npurt_log(NPURT_LOG_INFO, "device %d: %s (%s), submission %s, completion words %s", index,
		  dev->node, dev->bus_id, dev->path == NPURT_SUBMIT_IO_URING ? "io_uring" : "ioctl",
		  dev->words ? "mapped" : "none");
	pthread_mutex_init(&dev->models_lock, NULL);
	pthread_mutex_init(&dev->capture_lock, NULL);
	/* A handle the calls check from here; the close takes it back. */
	st = npurt_handle_add(dev, NPURT_KIND_DEVICE, dev, "npurt_device_open");
	if (!st)
		st = npurt_prof_open(dev, "npurt_device_open");
	if (st) {
		char msg[512];

		/* Closing must not overwrite why. */
		snprintf(msg, sizeof(msg), "%s", npurt_last_error());
		npurt_handle_add(dev, NPURT_KIND_DEVICE, dev, "npurt_device_open");
		npurt_device_close(dev);
		return npurt_set_error(st, "%s", msg);
	}
	*out = dev;
	return NPURT_OK;
}

void npurt_device_close(npurt_device *dev)
{
	const struct npurt_model_hooks *hooks;

	/* NULL is a no-op; a device closed already is said, and not read. */
	if (!dev || npurt_handle_check(dev, NPURT_KIND_DEVICE, "npurt_device_close"))
		return;
	npurt_log(NPURT_LOG_INFO, "device %s: closing", dev->node);
	npurt_callbacks_close(dev);
	hooks = npurt_hooks(dev);
	if (hooks)
		hooks->device_close(dev);
	pthread_mutex_destroy(&dev->models_lock);
	npurt_streams_close(dev);
	/* The streams' queues are gone: the ring holds its last records. */
	npurt_prof_close(dev);
	pthread_mutex_destroy(&dev->capture_lock);
	pthread_mutex_destroy(&dev->default_lock);
	npurt_notifies_close(dev);
	npurt_words_close(dev);
	npurt_events_close(dev);
	npurt_memory_close(dev);
	npurt_path_close(dev);
	/* Last: everything above may still call in with it. */
	npurt_handle_drop(dev);
	close(dev->fd);
	free(dev);
}

int npurt_device_fd(const npurt_device *dev)
{
	return dev ? dev->fd : -1;
}

npurt_status npurt_device_param(npurt_device *dev, const char *who, uint32_t param,
				uint64_t *value)
{
	struct drm_npu_get_param args = { .param = param };

	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_GET_PARAM, &args)) {
		int err = errno;

		return npurt_set_error(npurt_status_from_errno(err),
				       "%s: %s: GET_PARAM %u failed: %s",
				       who, dev->node, param, strerror(err));
	}
	*value = args.value;
	return NPURT_OK;
}

npurt_status npurt_device_get_info(npurt_device *dev, npurt_device_info *info)
{
	static const char who[] = "npurt_device_get_info";
	npurt_device_info out = { 0 };
	uint64_t v[DRM_NPU_PARAM_HBM_USED + 1];
	uint32_t units[2];
	drmVersionPtr ver;
	npurt_status st;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !info)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);

	for (uint32_t p = 0; p <= DRM_NPU_PARAM_HBM_USED; p++) {
		if (p == DRM_NPU_PARAM_RESERVED_9)
			continue;	/* was the ping: npurt_device_ping(), debugfs */
		st = npurt_device_param(dev, who, p, &v[p]);
		if (st)
			return st;
	}
	ver = drmGetVersion(dev->fd);
	if (!ver)
		return npurt_set_error(NPURT_ERR_DEVICE, "%s: %s: DRM_IOCTL_VERSION failed: %s",
				       who, dev->node, strerror(errno));
	snprintf(out.driver, sizeof(out.driver), "%s", ver->name);
	out.driver_version[0] = (uint32_t)ver->version_major;
	out.driver_version[1] = (uint32_t)ver->version_minor;
	out.driver_version[2] = (uint32_t)ver->version_patchlevel;
	drmFreeVersion(ver);

	snprintf(out.node, sizeof(out.node), "%s", dev->node);
	snprintf(out.bus_id, sizeof(out.bus_id), "%s", dev->bus_id);
	out.if_version[0] = (uint32_t)(v[DRM_NPU_PARAM_IF_VERSION] >> 16);
	out.if_version[1] = (uint32_t)(v[DRM_NPU_PARAM_IF_VERSION] & 0xffff);
	out.fw_version[0] = (uint32_t)(v[DRM_NPU_PARAM_FW_VERSION] >> 16) & 0xff;
	out.fw_version[1] = (uint32_t)(v[DRM_NPU_PARAM_FW_VERSION] >> 8) & 0xff;
	out.fw_version[2] = (uint32_t)v[DRM_NPU_PARAM_FW_VERSION] & 0xff;
	out.caps = v[DRM_NPU_PARAM_DEVICE_CAPS];
	out.hbm_size = v[DRM_NPU_PARAM_HBM_SIZE];
	out.hbm_reserved = v[DRM_NPU_PARAM_HBM_RESERVED];
	out.hbm_used = v[DRM_NPU_PARAM_HBM_USED];
	out.queue_count = (uint32_t)v[DRM_NPU_PARAM_QUEUE_COUNT];
	out.core_count = (uint32_t)v[DRM_NPU_PARAM_CORE_COUNT];
	/* Drivers before the units were counted ran one of each. */
	for (uint32_t p = DRM_NPU_PARAM_CORE_GROUPS; p <= DRM_NPU_PARAM_DMA_ENGINES; p++) {
		struct drm_npu_get_param gp = { .param = p };

		units[p - DRM_NPU_PARAM_CORE_GROUPS] =
			npurt_ioctl(dev, DRM_IOCTL_NPU_GET_PARAM, &gp) ? 1 : (uint32_t)gp.value;
	}
	out.core_group_count = units[0];
	out.dma_engine_count = units[1];
	out.heartbeat = v[DRM_NPU_PARAM_FW_HEARTBEAT];
	out.heartbeat_ms = (uint32_t)v[DRM_NPU_PARAM_FW_HEARTBEAT_MS];
	*info = out;
	return NPURT_OK;
}

/*
 * The ping is debugfs fw_ping of the device's DRM minor (root only): each
 * read sends the firmware a mailbox PING and prints the round trip in ns.
 */
npurt_status npurt_device_ping(npurt_device *dev, uint64_t *rtt_ns)
{
	static const char who[] = "npurt_device_ping";
	static const char *const dirs[] = { "/sys/kernel/debug/dri", "/sys/kernel/debug/accel" };
	char path[128], buf[64];
	struct stat st;
	int err = ENOENT;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !rtt_ns)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (fstat(dev->fd, &st))
		return npurt_set_error(npurt_status_from_errno(errno), "%s: %s: %s", who,
				       dev->node, strerror(errno));
	/* Directories named by minor (dri/N, accel/N before 6.8), then by device. */
	for (size_t i = 0; i < 2 * sizeof(dirs) / sizeof(dirs[0]); i++) {
		const char *dir = dirs[i % 2];
		ssize_t n;
		char *end;
		int fd;

		if (i < 2)
			snprintf(path, sizeof(path), "%s/%u/fw_ping", dir, minor(st.st_rdev));
		else if (dev->bus_id[0])
			snprintf(path, sizeof(path), "%s/%.32s/fw_ping", dir, dev->bus_id);
		else
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			if (errno != ENOENT)
				err = errno;
			continue;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		err = errno;
		close(fd);
		if (n <= 0)
			break;
		buf[n] = '\0';
		errno = 0;
		*rtt_ns = strtoull(buf, &end, 10);
		if (errno || end == buf)
			return npurt_set_error(NPURT_ERR_DEVICE, "%s: %s: unexpected \"%s\"",
					       who, path, buf);
		return NPURT_OK;
	}
	return npurt_set_error(npurt_status_from_errno(err), "%s: %s: debugfs fw_ping: %s",
			       who, dev->node, strerror(err));
}

npurt_submit_path npurt_device_submit_path(const npurt_device *dev)
{
	return dev ? dev->path : NPURT_SUBMIT_IOCTL;
}

int npurt_ioctl(npurt_device *dev, unsigned long request, void *arg)
{
	return drmIoctl(dev->fd, request, arg) ? errno : 0;
}
