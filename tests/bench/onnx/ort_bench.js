// SPDX-License-Identifier: MIT
// onnxruntime on the host's CPU as the anchor for npurun: a model run
// with one intra-op thread (and one inter-op), 10 warm-up runs, then RUNS
// timed ones; prints "NAME p50_ms p99_ms". Inputs are the model's .in
// file (tests/onnx/make_models.py), so both run the same data.
//
//   node ort_bench.js MODEL.onnx INPUT.in [RUNS]
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { percentiles } = require('./timing.js');

async function main() {
	const [model, input, runsArg] = process.argv.slice(2);
	const runs = Number(runsArg || 100);
	const session = await ort.InferenceSession.create(model, {
		intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all',
		executionProviders: ['cpu'],
	});
	const meta = session.inputNames[0];
	const raw = fs.readFileSync(input);
	const data = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
	const dims = JSON.parse(fs.readFileSync(model + '.dims', 'utf8'));
	const feeds = { [meta]: new ort.Tensor('float32', data, dims) };
	console.log(`${path.basename(model, '.onnx')} ${await percentiles(session, feeds, runs)}`);
}

main().catch(e => { console.error(`ort_bench: ${e.message}`); process.exit(1); });
