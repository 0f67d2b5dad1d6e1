// SPDX-License-Identifier: MIT
/*
 * npu-smi: list NPUs and what their driver and firmware report.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "npurt.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: npu-smi [-d INDEX] [--ping]\n"
		"\n"
		"  -d, --device INDEX   only this device (default: all)\n"
		"  -p, --ping           also time a firmware mailbox round trip\n"
		"  -h, --help           this text\n");
}

static int show(int index, int ping)
{
	npurt_device_info info;
	npurt_device *dev = NULL;
	uint64_t rtt;

	if (npurt_device_open(index, &dev) ||
	    npurt_device_get_info(dev, &info)) {
		fprintf(stderr, "npu-smi: %s\n", npurt_last_error());
		npurt_device_close(dev);
		return 1;
	}
	printf("NPU %d: %s (pci %s)\n", index, info.node,
	       info.bus_id[0] ? info.bus_id : "?");
	printf("  driver        %s %u.%u.%u\n", info.driver,
	       info.driver_version[0], info.driver_version[1], info.driver_version[2]);
	printf("  interface     %u.%u\n", info.if_version[0], info.if_version[1]);
	printf("  firmware      %u.%u.%u\n", info.fw_version[0], info.fw_version[1],
	       info.fw_version[2]);
	printf("  HBM           %" PRIu64 " MiB (%" PRIu64 " KiB reserved by firmware)\n",
	       info.hbm_size >> 20, info.hbm_reserved >> 10);
	printf("  HBM in use    %" PRIu64 " bytes\n", info.hbm_used);
	printf("  queues        %u\n", info.queue_count);
	printf("  AI cores      %u in %u groups\n", info.core_count, info.core_group_count);
	printf("  copy engines  %u\n", info.dma_engine_count);
	printf("  heartbeat     %" PRIu64 " (every %u ms)\n", info.heartbeat,
	       info.heartbeat_ms);
	printf("  submission    %s\n", npurt_device_submit_path(dev) == NPURT_SUBMIT_IO_URING ?
	       "io_uring" : "ioctl");
	if (ping) {
		if (npurt_device_ping(dev, &rtt)) {
			fprintf(stderr, "npu-smi: %s\n", npurt_last_error());
			npurt_device_close(dev);
			return 1;
		}
		printf("  mailbox ping  %.1f us\n", (double)rtt / 1000.0);
	}
	npurt_device_close(dev);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "ping", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, only = -1, ping = 0, count, rc = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "d:ph", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			only = (int)strtol(optarg, &end, 10);
			if (*end || only < 0) {
				fprintf(stderr, "npu-smi: bad device index '%s'\n", optarg);
				return 2;
			}
			break;
		case 'p':
			ping = 1;
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
		fprintf(stderr, "npu-smi: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}

	if (npurt_device_count(&count)) {
		fprintf(stderr, "npu-smi: %s\n", npurt_last_error());
		return 1;
	}
	if (only >= 0)
		return show(only, ping);
	if (count == 0) {
		fprintf(stderr, "npu-smi: no NPU found (is npu.ko loaded?)\n");
		return 1;
	}
	printf("npu-smi: %d device%s\n", count, count == 1 ? "" : "s");
	for (int i = 0; i < count; i++)
		rc |= show(i, ping);
	return rc;
}
