// SPDX-License-Identifier: MIT
// The anchor's clock: a session run 10 times to warm up, then `runs`
// times on the monotonic clock; "p50 p99" in ms, as make bench prints
// them (ort_bench.js, tests/zoo/reference.js --time).
'use strict';

async function percentiles(session, feeds, runs) {
	const t = [];

	for (let i = 0; i < 10; i++)
		await session.run(feeds);
	for (let i = 0; i < runs; i++) {
		const s = process.hrtime.bigint();
		await session.run(feeds);
		t.push(Number(process.hrtime.bigint() - s) / 1e6);
	}
	t.sort((a, b) => a - b);
	const at = q => t[Math.min(t.length - 1, Math.ceil(q * t.length) - 1)];
	return `${at(0.5).toFixed(3)} ${at(0.99).toFixed(3)}`;
}

module.exports = { percentiles };
