// SPDX-License-Identifier: MIT
/*
 * The model file reader under libFuzzer (with ASan and UBSan): any bytes
 * are either refused with a reason or a model that writes back to a file
 * the reader takes again, byte for byte the same.
 *
 * Random bytes rarely get past the checksums, so for inputs whose first
 * byte is odd the harness first mends them (header, table and section
 * CRCs recomputed where the table can be read): the fuzzer then reaches
 * the checks of tensors, ops, events, streams and the memory plan.
 *
 *   build/tests/fuzz/model_fuzz NEW_DIR tests/fuzz/model-corpus
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_file.h"

static void mend(uint8_t *p, size_t len)
{
	struct npum_header h;

	if (len < sizeof(h))
		return;
	memcpy(&h, p, sizeof(h));
	if (h.section_offset <= len && h.section_count <= 64 &&
	    (uint64_t)h.section_count * sizeof(struct npum_section) <= len - h.section_offset) {
		struct npum_section *tab = (struct npum_section *)(p + h.section_offset);

		for (uint32_t i = 0; i < h.section_count; i++) {
			struct npum_section s;

			memcpy(&s, &tab[i], sizeof(s));
			if (s.offset <= len && s.size <= len - s.offset) {
				s.crc = mf_crc32(p + s.offset, s.size);
				memcpy(&tab[i], &s, sizeof(s));
			}
		}
		h.table_crc = mf_crc32(tab, h.section_count * sizeof(*tab));
	}
	h.file_size = len;
	h.header_crc = 0;
	h.header_crc = mf_crc32(&h, sizeof(h));
	memcpy(p, &h, sizeof(h));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mf_model m, back;
	char why[256];
	uint8_t *copy;
	void *out;
	size_t len;

	if (!size)
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (data[0] & 1)
		mend(copy, size);
	if (mf_parse(copy, size, &m, why, sizeof(why))) {
		free(copy);
		if (!why[0])
			__builtin_trap();	/* refused without a reason */
		return 0;
	}
	free(copy);
	if (mf_serialize(&m, &out, &len) == 0) {
		void *again;
		size_t len2;

		if (mf_parse(out, len, &back, why, sizeof(why))) {
			fprintf(stderr, "a model written back is refused: %s\n", why);
			__builtin_trap();
		}
		if (mf_serialize(&back, &again, &len2) || len2 != len || memcmp(again, out, len))
			__builtin_trap();
		free(again);
		mf_free(&back);
		free(out);
	}
	mf_free(&m);
	return 0;
}
