// SPDX-License-Identifier: MIT
// tests/zoo/reference.js DIR NAME: a zoo model's reference outputs, from
// onnxruntime-node on the host's CPU (one thread, all optimizations), for
// the inputs tests/zoo/inputs.py wrote (DIR/NAME.io). Writes each output
// raw (float32, little-endian) to DIR/NAME.out.K and appends to
// DIR/NAME.io a line per output: "out K DIMS FILE NAME" (the name last: it
// may hold spaces; one model's is a JSON object).
//
// tests/zoo/reference.js DIR NAME --time RUNS: instead, time RUNS runs
// after 10 to warm up, and print "NAME p50_ms p99_ms" (make bench's
// anchor for the zoo, the same feeds and session options).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');
const { percentiles } = require('../bench/onnx/timing.js');

async function main() {
	const [dir, name, opt, runsArg] = process.argv.slice(2);
	const io = `${dir}/${name}.io`;
	const feeds = {};
	for (const line of fs.readFileSync(io, 'utf8').split('\n')) {
		const f = line.split(' ');
		let type, dimsTxt, what, input;
		if (f[0] === 'in')
			[type, dimsTxt, what, input] = [f[2], f[3], f[4], f.slice(5).join(' ')];
		else if (f[0] === 'const')
			[type, dimsTxt, what, input] = [f[1], f[2], f[3], f.slice(4).join(' ')];
		else
			continue;
		const dims = dimsTxt === '-' ? [] : dimsTxt.split('x').map(Number);
		let data;
		if (f[0] === 'const') {
			const vals = what.split(',').map(Number);
			data = type === 'int64' ? BigInt64Array.from(vals.map(BigInt)) : Float32Array.from(vals);
		} else {
			const raw = fs.readFileSync(`${dir}/${what}`);
			data = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
		}
		feeds[input] = new ort.Tensor(type, data, dims);
	}
	const session = await ort.InferenceSession.create(`${dir}/${name}.onnx`, {
		intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all',
		executionProviders: ['cpu'],
	});
	if (opt === '--time') {
		console.log(`${name} ${await percentiles(session, feeds, Number(runsArg || 100))}`);
		return;
	}
	const results = await session.run(feeds);
	let lines = '';
	session.outputNames.forEach((out, k) => {
		const t = results[out];
		if (t.type !== 'float32')
			throw new Error(`${name}: output ${out} is ${t.type}`);
		const file = `${name}.out.${k}`;
		fs.writeFileSync(`${dir}/${file}`, Buffer.from(t.data.buffer, t.data.byteOffset,
								 t.data.byteLength));
		lines += `out ${k} ${t.dims.join('x') || '-'} ${file} ${out}\n`;
	});
	fs.appendFileSync(io, lines);
}

main().catch(e => { console.error(`reference.js: ${e.message}`); process.exit(1); });
