// SPDX-License-Identifier: MIT
/*
 * npu.ko through its raw ABI: probe, GET_PARAM, argument validation,
 * unbind with open files, and module reload with the device bound.
 * Runs as root in the VM (tests/vm/run), against npu-fwsim.
 */
#include <linux/sync_file.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <xf86drm.h>

#include "kselftest_harness.h"
#include "npu_fw_if.h"
#include "npu_selftest.h"

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = npu_open();
	ASSERT_LE(0, self->fd) TH_LOG("no npu device: %s", strerror(-self->fd));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

TEST_F(dev, driver_name_is_npu)
{
	drmVersionPtr v = drmGetVersion(self->fd);

	ASSERT_NE(NULL, v);
	EXPECT_STREQ("npu", v->name);
	drmFreeVersion(v);
}

TEST_F(dev, hbm_size_matches_fwsim)
{
	uint64_t want = npu_env("NPU_TEST_HBM_SIZE"), v = 0, reserved = 0;

	if (!want)
		SKIP(return, "NPU_TEST_HBM_SIZE not set (run under tests/vm/run)");
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_HBM_SIZE, &v));
	EXPECT_EQ(want, v);
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_HBM_RESERVED, &reserved));
	EXPECT_LE(sizeof(struct npu_fw_ctrl), reserved);
	EXPECT_GT(v, reserved);
}

TEST_F(dev, queue_and_core_counts_match_fwsim)
{
	uint64_t queues = npu_env("NPU_TEST_QUEUES"), cores = npu_env("NPU_TEST_CORES");
	uint64_t v = 0;

	if (!queues || !cores)
		SKIP(return, "NPU_TEST_QUEUES/CORES not set (run under tests/vm/run)");
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_QUEUE_COUNT, &v));
	EXPECT_EQ(queues, v);
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_CORE_COUNT, &v));
	EXPECT_EQ(cores, v);
}

TEST_F(dev, unit_counts_match_fwsim)
{
	uint64_t groups = npu_env("NPU_TEST_CORE_GROUPS"), dma = npu_env("NPU_TEST_DMA_ENGINES");
	uint64_t v = 0;

	if (!groups || !dma)
		SKIP(return, "NPU_TEST_CORE_GROUPS/DMA_ENGINES not set (run under tests/vm/run)");
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_CORE_GROUPS, &v));
	EXPECT_EQ(groups, v);
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_DMA_ENGINES, &v));
	EXPECT_EQ(dma, v);
}

TEST_F(dev, interface_version_is_supported)
{
	uint64_t v = 0;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_IF_VERSION, &v));
	EXPECT_EQ(NPU_FW_IF_MAJOR, NPU_FW_IF_VERSION_MAJOR(v));
	EXPECT_LE(NPU_FW_IF_MINOR_MIN, NPU_FW_IF_VERSION_MINOR(v));
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_FW_VERSION, &v));
	EXPECT_NE(0, v);
}

TEST_F(dev, heartbeat_advances)
{
	uint64_t period = 0, before = 0, after = 0;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_FW_HEARTBEAT_MS, &period));
	ASSERT_LT(0, period);
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_FW_HEARTBEAT, &before));
	usleep(period * 5 * 1000);
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_FW_HEARTBEAT, &after));
	EXPECT_LT(before, after);
}

TEST_F(dev, ping_round_trips)
{
	uint64_t rtt = 0;

	for (int i = 0; i < 200; i++) {
		ASSERT_EQ(0, npu_fw_ping(self->fd, &rtt));
		ASSERT_LT(0, rtt);
		/* Far below the 2 s mailbox timeout: answered by interrupt. */
		ASSERT_GT(500000000ull, rtt);
	}
}

TEST_F(dev, unknown_param_is_einval)
{
	struct drm_npu_get_param p = { .param = 0xffff, .value = 77 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &p));
	EXPECT_EQ(EINVAL, errno);
	p.param = 0x80000000u;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &p));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(77, p.value);		/* nothing written back on error */
}

/* The ping moved to debugfs fw_ping; its number stays reserved. */
TEST_F(dev, old_ping_param_is_einval)
{
	struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_RESERVED_9, .value = 77 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &p));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(77, p.value);
}

TEST_F(dev, nonzero_flags_are_einval)
{
	struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_HBM_SIZE, .flags = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &p));
	EXPECT_EQ(EINVAL, errno);
	p.flags = 0x80000000u;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &p));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(dev, bad_user_pointer_is_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	struct drm_npu_get_param *ro;

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, (void *)8));
	EXPECT_EQ(EFAULT, errno);

	/* Readable but not writable: the result cannot be copied back. */
	ro = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ro->param = DRM_NPU_PARAM_HBM_SIZE;
	ASSERT_EQ(0, mprotect(ro, page, PROT_READ));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, ro));
	EXPECT_EQ(EFAULT, errno);
	munmap(ro, page);
}

TEST_F(dev, unknown_ioctl_is_rejected)
{
	struct drm_npu_get_param p = { 0 };
	unsigned long nr = DRM_IOWR(DRM_COMMAND_BASE + 0x3f, struct drm_npu_get_param);

	EXPECT_EQ(-1, ioctl(self->fd, nr, &p));
	EXPECT_EQ(EINVAL, errno);
}

/*
 * The node serves the DRM core ioctls of a render node and no more, even
 * to root, whether it is one (6.1) or an accel node (6.12, where DRM
 * itself does not filter them, and GET_UNIQUE dereferenced the master an
 * accel file never has: an oops).
 */
TEST_F(dev, core_ioctls_of_the_primary_node_are_refused)
{
	char name[64] = "";
	struct drm_unique u = { .unique_len = sizeof(name), .unique = name };
	struct drm_auth a = { 0 };
	struct drm_set_version sv = { 1, 4, -1, -1 };
	struct drm_gem_flink fl = { 0 };
	struct drm_gem_open go = { .name = 1 };
	struct drm_set_client_cap cc = { .capability = DRM_CLIENT_CAP_ATOMIC, .value = 1 };
	struct drm_client cl = { 0 };
	struct drm_version v = { 0 };
	struct drm_npu_bo_create bo;

	ASSERT_EQ(0, npu_bo_create(self->fd, 1 << 16, 0, &bo));
	fl.handle = bo.handle;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GET_UNIQUE, &u));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GET_MAGIC, &a));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SET_VERSION, &sv));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GEM_FLINK, &fl));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GEM_OPEN, &go));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SET_CLIENT_CAP, &cc));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GET_CLIENT, &cl));
	EXPECT_EQ(EACCES, errno);
	/* What a render node serves still works. */
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_VERSION, &v));
	EXPECT_EQ(0, npu_gem_close(self->fd, bo.handle));
}

/* Structs grow by size: a caller built with a shorter struct still works. */
struct get_param_v0 {
	__u32 param;
	__u32 pad;
};

TEST_F(dev, shorter_struct_from_older_caller)
{
	struct {
		struct get_param_v0 args;
		uint64_t canary;
	} buf = { { .param = DRM_NPU_PARAM_HBM_SIZE }, 0x5a5a5a5a5a5a5a5aull };
	unsigned long nr = DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_GET_PARAM,
				    struct get_param_v0);

	EXPECT_EQ(0, ioctl(self->fd, nr, &buf.args));
	/* The kernel copied back only the 8 bytes the caller knows about. */
	EXPECT_EQ(0x5a5a5a5a5a5a5a5aull, buf.canary);
}

TEST(other_ivshmem_devices_are_left_alone)
{
	struct dirent *de;
	int ours = 0, others_unbound = 0, others = 0;
	DIR *dir = opendir("/sys/bus/pci/devices");

	if (!getenv("NPU_VM"))
		SKIP(return, "needs the VM's decoy ivshmem device");
	ASSERT_NE(NULL, dir);
	while ((de = readdir(dir))) {
		char path[512], buf[16] = "", link[256];
		int fd;
		ssize_t n;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", de->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0 || strncmp(buf, "0x1110", 6))
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = '\0';
		if (strstr(link, "/npu"))
			ours++;
		else
			others++, others_unbound += n <= 0;
	}
	closedir(dir);
	EXPECT_EQ(1, ours);
	EXPECT_EQ(1, others);		/* the harness's zero-filled decoy */
	EXPECT_EQ(1, others_unbound);
}

TEST(unbind_with_open_file_then_rebind)
{
	char node[64], bdf[32], node2[64], bdf2[32];
	uint64_t v = 0;
	int fd;

	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/unbind", bdf));

	/* The file outlives the device and reports it gone. */
	EXPECT_EQ(-ENODEV, npu_get_param(fd, DRM_NPU_PARAM_FW_HEARTBEAT, &v));
	EXPECT_EQ(-ENODEV, npu_get_param(fd, DRM_NPU_PARAM_HBM_SIZE, &v));
	close(fd);

	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/bind", bdf));
	ASSERT_EQ(0, npu_find(node2, sizeof(node2), bdf2, sizeof(bdf2)));
	EXPECT_STREQ(bdf, bdf2);
	fd = open(node2, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, npu_fw_ping(fd, &v));
	close(fd);
}

TEST(unbind_with_work_in_flight_then_rebind)
{
	char node[64], bdf[32];
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	uint64_t seq = 0, v = 0;
	void *p;
	int fd;

	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_bo_create(fd, 32 << 20, DRM_NPU_BO_PAGE_HUGE_FIRST, &c));
	p = npu_bo_mmap(fd, c.handle, 32 << 20);
	ASSERT_NE(MAP_FAILED, p);
	t = npu_task_fill(c.device_va, 32 << 20, 1);
	/* Seconds of device time: still running when the driver comes back. */
	for (int i = 0; i < 400; i++)
		ASSERT_EQ(0, npu_submit(fd, &t, 1, &seq));

	/* The device goes away with work queued, a mapping and a buffer open. */
	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/unbind", bdf));
	EXPECT_EQ(-ENODEV, npu_wait(fd, seq, 0, NULL));
	EXPECT_EQ(-ENODEV, npu_submit(fd, &t, 1, NULL));
	munmap(p, 32 << 20);
	close(fd);

	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/bind", bdf));
	fd = npu_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, npu_fw_ping(fd, &v));
	/* A fresh driver instance: nothing in use. */
	EXPECT_EQ(0, npu_dev_usage(fd, DRM_NPU_MEM_REGION_HBM));
	/* And the old work is dead: it would be filling this memory with 1s. */
	ASSERT_EQ(0, npu_bo_create(fd, 32 << 20, DRM_NPU_BO_PAGE_HUGE_FIRST, &c));
	p = npu_bo_mmap(fd, c.handle, 32 << 20);
	ASSERT_NE(MAP_FAILED, p);
	usleep(300000);
	for (size_t i = 0; i < (32 << 20) / 4; i += 1021) {
		ASSERT_EQ(0, ((uint32_t *)p)[i]) TH_LOG("word %zu", i);
	}
	munmap(p, 32 << 20);
	npu_gem_close(fd, c.handle);
	ASSERT_EQ(0, npu_bo_create(fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	t = npu_task_fill(c.device_va, 4096, 2);
	ASSERT_EQ(0, npu_submit(fd, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait(fd, seq, 10000000000ll, NULL));
	close(fd);
}

/* Bind the device again: 0 once the new instance answers and holds no memory. */
static int rebind(const char *bdf)
{
	uint64_t v = 0;
	int fd, ret;

	ret = npu_sysfs_write(NPU_SYSFS_DRIVER "/bind", bdf);
	if (ret)
		return ret;
	fd = npu_open();
	if (fd < 0)
		return fd;
	ret = npu_fw_ping(fd, &v);
	if (!ret && npu_dev_usage(fd, DRM_NPU_MEM_REGION_HBM))
		ret = -EBUSY;
	close(fd);
	return ret;
}

struct multi_call {
	int fd;
	struct drm_npu_submit_multi m;
	int ret;
};

static void *multi_call_run(void *arg)
{
	struct multi_call *c = arg;

	c->ret = ioctl(c->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &c->m) ? -errno : 0;
	return NULL;
}

/*
 * A SUBMIT_MULTI that sleeps in copy_from_user (here on a userfaultfd
 * page) while the device is unbound, then resumes, gets -ENODEV and
 * touches no hardware. It used to create the file's default queue, and
 * so write its slot through the BARs and ring the mailbox, outside the
 * device's section: unmapped MMIO after the unbind, an oops.
 */
TEST(a_multi_submit_resumed_after_unbind_touches_no_device)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP };
	struct drm_npu_submit_entry *e, page_entry;
	char node[64], bdf[32], *src;
	struct pollfd pfd;
	struct uffd_msg msg;
	struct multi_call c;
	pthread_t th;
	long psz = sysconf(_SC_PAGESIZE);
	int uffd, fd;

	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	e = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, e);
	reg.range.start = (uintptr_t)e;
	reg.range.len = psz;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));

	/* A fresh file: no default queue yet, so the submit would make one. */
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	c = (struct multi_call){ .fd = fd, .m = { .entries = DRM_NPU_OBJ_ARRAY(1, e) } };
	ASSERT_EQ(0, pthread_create(&th, NULL, multi_call_run, &c));
	pfd = (struct pollfd){ .fd = uffd, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	ASSERT_EQ((ssize_t)sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);

	/* The caller sleeps in the kernel, holding no section: the unbind goes through. */
	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/unbind", bdf));
	src = aligned_alloc(psz, psz);
	ASSERT_NE(NULL, src);
	memset(src, 0, psz);
	page_entry = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&nop, .count = 1 };
	memcpy(src, &page_entry, sizeof(page_entry));
	{
		struct uffdio_copy copy = { .dst = (uintptr_t)e, .src = (uintptr_t)src, .len = psz };

		ASSERT_EQ(0, ioctl(uffd, UFFDIO_COPY, &copy));
	}
	pthread_join(th, NULL);
	EXPECT_EQ(-ENODEV, c.ret);
	close(fd);
	free(src);
	munmap(e, psz);
	close(uffd);
	EXPECT_EQ(0, rebind(bdf));
}

/*
 * The device goes with a multi-queue run in flight, its fence exported
 * as a sync_file, and the file closes: the run's batches fail, and its
 * last reference goes after the file's, the device's too. A run held its
 * queues but not the device, and a queue not its context, so that last
 * put reached a freed npu_device and context (KASAN reports it in make
 * check-debug). The sync_file says the run failed; the driver comes back.
 */
TEST(unbind_with_a_multi_queue_run_in_flight)
{
	char node[64], bdf[32];
	struct drm_npu_bo_create c;
	struct drm_npu_task fill[2][2];
	struct drm_npu_submit_entry e[2];
	struct drm_npu_syncobj out;
	struct drm_npu_submit_multi m;
	uint32_t q[2], so, n;
	int fd, sf = -1;

	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_bo_create(fd, 32 << 20, DRM_NPU_BO_PAGE_HUGE_FIRST, &c));
	/* Both batches wait for a notify nobody records: in flight at the unbind. */
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_NOTIFY, &n));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q[i]));
		fill[i][0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { n } };
		fill[i][1] = npu_task_fill(c.device_va + i * (16 << 20), 16 << 20, i + 1);
		e[i] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)fill[i], .count = 2,
						      .queue = q[i] };
	}
	ASSERT_EQ(0, drmSyncobjCreate(fd, 0, &so));
	out = (struct drm_npu_syncobj){ .handle = so };
	for (int r = 0; r < 4; r++) {
		m = (struct drm_npu_submit_multi){ .entries = DRM_NPU_OBJ_ARRAY(2, e),
						   .out_syncobjs = (uintptr_t)&out, .out_count = 1 };
		ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	}
	ASSERT_EQ(0, drmSyncobjExportSyncFile(fd, so, &sf));

	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/unbind", bdf));
	close(fd);
	/* The last run ends failed or cancelled, not well. */
	{
		struct pollfd p = { .fd = sf, .events = POLLIN };
		struct sync_file_info info = { 0 };

		EXPECT_EQ(1, poll(&p, 1, 10000));
		ASSERT_EQ(0, ioctl(sf, SYNC_IOC_FILE_INFO, &info));
		EXPECT_GT(0, info.status);
	}
	usleep(200000);		/* the runs' last references go from a workqueue */
	close(sf);
	EXPECT_EQ(0, rebind(bdf));
}

static int module_unload(void)
{
	return syscall(SYS_delete_module, "npu", O_NONBLOCK) ? -errno : 0;
}

static int module_load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, "", 0))
		ret = -errno;
	close(fd);
	return ret;
}

/* Unloads, waiting out fences whose last free (an RCU callback) is pending. */
static int module_unload_settled(void)
{
	int ret = module_unload();

	for (int i = 0; i < 200 && ret == -EWOULDBLOCK; i++) {
		usleep(10000);
		ret = module_unload();
	}
	return ret;
}

static void sync_file_names(int sf, char *driver, char *timeline, int *status)
{
	struct sync_fence_info fi = { 0 };
	struct sync_file_info info = { .num_fences = 1, .sync_fence_info = (uintptr_t)&fi };

	*status = -1000;
	driver[0] = timeline[0] = 0;
	if (ioctl(sf, SYNC_IOC_FILE_INFO, &info) || info.num_fences != 1)
		return;
	memcpy(driver, fi.driver_name, sizeof(fi.driver_name));
	memcpy(timeline, fi.obj_name, sizeof(fi.obj_name));
	*status = fi.status;
}

/*
 * Fences outlive the file, the device and the module's load: a
 * sync_file of a batch (a scheduler fence over the driver's hardware
 * fence) and one of a run (the driver's own fence type) are kept while
 * the file closes and the device goes. Asking them their names reads
 * the queue's memory and calls into the module, so the device's going
 * must leave that memory and the module must not unload until they are
 * released. The queues' memory was the device's (KASAN reports a
 * use-after-free in make check-debug) and the fences did not hold the
 * module (rmmod went through; the next FILE_INFO would oops).
 */
TEST(fences_kept_past_close_and_unbind_hold_the_module)
{
	const char *ko = getenv("NPU_KO");
	char node[64], bdf[32], drv[32], tl[32];
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	struct drm_npu_syncobj out[2];
	struct drm_npu_submit_entry e;
	struct drm_npu_submit_multi m;
	struct drm_npu_submit s;
	uint32_t q, so[2];
	int fd, sf[2], status;

	if (!ko)
		SKIP(return, "NPU_KO not set");
	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_bo_create(fd, 1 << 20, 0, &c));
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	t = npu_task_fill(c.device_va, 1 << 20, 7);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, drmSyncobjCreate(fd, 0, &so[i]));
		out[i] = (struct drm_npu_syncobj){ .handle = so[i] };
	}
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
				     .out_syncobjs = (uintptr_t)&out[0], .out_count = 1 };
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_NPU_SUBMIT, &s));
	e = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&t, .count = 1, .queue = q };
	m = (struct drm_npu_submit_multi){ .entries = DRM_NPU_OBJ_ARRAY(1, &e),
					   .out_syncobjs = (uintptr_t)&out[1], .out_count = 1 };
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	for (int i = 0; i < 2; i++) {
		struct pollfd p;

		ASSERT_EQ(0, drmSyncobjExportSyncFile(fd, so[i], &sf[i]));
		p = (struct pollfd){ .fd = sf[i], .events = POLLIN };
		ASSERT_EQ(1, poll(&p, 1, 10000));
	}
	close(fd);
	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/unbind", bdf));
	usleep(200000);		/* the context's last references go from a workqueue */

	sync_file_names(sf[0], drv, tl, &status);
	EXPECT_EQ(1, status);
	EXPECT_EQ(0, strncmp(tl, "npu-c", 5)) TH_LOG("batch timeline \"%s\"", tl);
	EXPECT_EQ(-EWOULDBLOCK, module_unload());
	sync_file_names(sf[1], drv, tl, &status);
	EXPECT_EQ(1, status);
	EXPECT_STREQ("npu", drv);
	EXPECT_STREQ("npu-run", tl);

	close(sf[0]);
	close(sf[1]);
	EXPECT_EQ(0, module_unload_settled());
	ASSERT_EQ(0, module_load(ko));
	EXPECT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
}

TEST(module_is_busy_while_a_file_is_open)
{
	uint64_t v = 0;
	int fd = npu_open();

	if (!getenv("NPU_KO"))
		SKIP(return, "NPU_KO not set");
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EWOULDBLOCK, module_unload());
	EXPECT_EQ(0, npu_fw_ping(fd, &v));
	close(fd);
}

TEST(module_reloads_with_device_bound)
{
	const char *ko = getenv("NPU_KO");
	char node[64], bdf[32], node2[64], bdf2[32];
	struct stat st;

	if (!ko)
		SKIP(return, "NPU_KO not set");
	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));

	for (int i = 0; i < 5; i++) {
		uint64_t rtt = 0, hbm = 0;
		int fd;

		ASSERT_EQ(0, module_unload_settled()) TH_LOG("round %d", i);
		EXPECT_NE(0, stat(NPU_SYSFS_DRIVER, &st));
		EXPECT_NE(0, stat(node, &st));

		ASSERT_EQ(0, module_load(ko)) TH_LOG("round %d", i);
		ASSERT_EQ(0, npu_find(node2, sizeof(node2), bdf2, sizeof(bdf2)));
		/* Same device, same node: nothing from the last load leaked. */
		EXPECT_STREQ(bdf, bdf2);
		EXPECT_STREQ(node, node2);
		fd = open(node2, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		EXPECT_EQ(0, npu_fw_ping(fd, &rtt));
		EXPECT_EQ(0, npu_get_param(fd, DRM_NPU_PARAM_HBM_SIZE, &hbm));
		EXPECT_LT(0, hbm);
		close(fd);
	}
}

TEST_HARNESS_MAIN
