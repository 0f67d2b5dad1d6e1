// SPDX-License-Identifier: MIT
/*
 * npu-fwsim command line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwsim.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: npu-fwsim --socket PATH [options]\n"
		"\n"
		"Emulated NPU firmware: serves QEMU's ivshmem-doorbell device on PATH.\n"
		"\n"
		"  -s, --socket PATH      ivshmem server socket (required)\n"
		"  -m, --hbm-size SIZE    device memory, a power of two with K/M/G suffix\n"
		"                         (default 256M)\n"
		"  -q, --queues N         hardware queues, 1-256 (default 16)\n"
		"  -c, --cores N          AI cores, 1-64 (default 4)\n"
		"      --core-groups N    AI-core groups: kernel launches computing at\n"
		"                         once, 1-16 and at most the cores (default 2)\n"
		"      --dma-engines N    copy engines: copies and fills moving at once,\n"
		"                         1-16 (default 2)\n"
		"      --heartbeat-ms N   heartbeat period (default 100)\n"
		"  -g, --guest-ram PATH   guest RAM file shared with QEMU, for DMA\n"
		"      --die-with-parent  exit when the parent process exits\n"
		"      --fault-injection  accept fault-injection commands (for tests)\n"
		"  -v, --verbose          log connections\n"
		"  -h, --help             this text\n");
}

/* "256M", "4096", "1G": bytes, or 0 on a malformed or overflowing value. */
static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v, mult = 1;

	errno = 0;
	if (*s == '-')
		return 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'k': case 'K': mult = 1ull << 10; end++; break;
	case 'm': case 'M': mult = 1ull << 20; end++; break;
	case 'g': case 'G': mult = 1ull << 30; end++; break;
	default: break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	if (*end || v > UINT64_MAX / mult)
		return 0;
	return v * mult;
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	if (*s == '-')
		return -1;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	enum { OPT_HEARTBEAT = 256, OPT_DIE, OPT_INJECT, OPT_GROUPS, OPT_DMA };
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "hbm-size", required_argument, NULL, 'm' },
		{ "queues", required_argument, NULL, 'q' },
		{ "cores", required_argument, NULL, 'c' },
		{ "core-groups", required_argument, NULL, OPT_GROUPS },
		{ "dma-engines", required_argument, NULL, OPT_DMA },
		{ "heartbeat-ms", required_argument, NULL, OPT_HEARTBEAT },
		{ "guest-ram", required_argument, NULL, 'g' },
		{ "die-with-parent", no_argument, NULL, OPT_DIE },
		{ "fault-injection", no_argument, NULL, OPT_INJECT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct fwsim_opts o = { 0 };
	bool groups_given = false;
	const char *bad;
	int c;

	npu_dev_config_default(&o.cfg);
	while ((c = getopt_long(argc, argv, "s:m:q:c:g:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.socket_path = optarg;
			break;
		case 'm':
			o.cfg.hbm_size = parse_size(optarg);
			if (!o.cfg.hbm_size) {
				fprintf(stderr, "npu-fwsim: bad --hbm-size '%s' (e.g. 256M)\n", optarg);
				return 2;
			}
			break;
		case 'q':
			if (parse_u32(optarg, &o.cfg.num_queues)) {
				fprintf(stderr, "npu-fwsim: bad --queues '%s'\n", optarg);
				return 2;
			}
			break;
		case 'c':
			if (parse_u32(optarg, &o.cfg.num_cores)) {
				fprintf(stderr, "npu-fwsim: bad --cores '%s'\n", optarg);
				return 2;
			}
			break;
		case OPT_GROUPS:
			if (parse_u32(optarg, &o.cfg.num_core_groups)) {
				fprintf(stderr, "npu-fwsim: bad --core-groups '%s'\n", optarg);
				return 2;
			}
			groups_given = true;
			break;
		case OPT_DMA:
			if (parse_u32(optarg, &o.cfg.num_dma)) {
				fprintf(stderr, "npu-fwsim: bad --dma-engines '%s'\n", optarg);
				return 2;
			}
			break;
		case OPT_HEARTBEAT:
			if (parse_u32(optarg, &o.cfg.heartbeat_ms)) {
				fprintf(stderr, "npu-fwsim: bad --heartbeat-ms '%s'\n", optarg);
				return 2;
			}
			break;
		case 'g':
			o.guest_ram = optarg;
			break;
		case OPT_DIE:
			o.die_with_parent = 1;
			break;
		case OPT_INJECT:
			o.cfg.fault_injection = true;
			break;
		case 'v':
			o.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "npu-fwsim: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o.socket_path) {
		fprintf(stderr, "npu-fwsim: --socket PATH is required\n");
		usage(stderr);
		return 2;
	}
	/* The default grouping never asks for more groups than cores. */
	if (!groups_given && o.cfg.num_core_groups > o.cfg.num_cores)
		o.cfg.num_core_groups = o.cfg.num_cores;
	bad = npu_dev_config_check(&o.cfg);
	if (bad) {
		fprintf(stderr, "npu-fwsim: %s\n", bad);
		return 2;
	}
	/*
	 * A launch's tensors are host buffers gathered from device memory
	 * and freed when it ends: glibc would give large ones back to the
	 * kernel (mmap, or trimming the heap) and fault them in again, page
	 * by page, on the next launch. Keep them.
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	return fwsim_run(&o);
}
