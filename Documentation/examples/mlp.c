// SPDX-License-Identifier: MIT
/*
 * An MLP forward pass through kernel launches, all on one stream:
 *
 *   h = gelu(x W1 + b1)        x: 16x64, W1: 64x128
 *   y = softmax(h W2 + b2)     W2: 128x10
 *
 * The biases are added with a broadcast view (stride 0 over the batch),
 * and the result is checked against the same network on the host.
 *
 *   cc mlp.c $(pkg-config --cflags --libs npurt) -lm -o mlp
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <npurt.h>

enum { B = 16, I = 64, H = 128, O = 10 };

#define CHECK(call) do {							\
	npurt_status st_ = (call);						\
	if (st_) {								\
		fprintf(stderr, "%s: %s\n", #call, npurt_last_error());	\
		exit(1);							\
	}									\
} while (0)

/* Where each tensor lives in one buffer, in floats. */
enum {
	X = 0, W1 = X + B * I, B1 = W1 + I * H, W2 = B1 + H, B2 = W2 + H * O,
	HID = B2 + O, Y = HID + B * H, TOTAL = Y + B * O,
};

static npurt_tensor mat(uint64_t base, int off, uint64_t rows, uint64_t cols)
{
	npurt_tensor t;

	CHECK(npurt_tensor_init(&t, base + 4ull * off, NPURT_F32, 2, (uint64_t[]){ rows, cols }));
	return t;
}

/* The bias vector at `off` seen as rows x cols: every row the same. */
static npurt_tensor bias(uint64_t base, int off, uint64_t rows, uint64_t cols)
{
	npurt_tensor t = mat(base, off, rows, cols);

	t.stride[0] = 0;
	return t;
}

static void launch(npurt_stream *s, const char *op, npurt_tensor in0, const npurt_tensor *in1,
		   npurt_tensor out)
{
	npurt_launch_desc d;
	uint32_t id;

	CHECK(npurt_op_lookup(op, &id));
	CHECK(npurt_launch_init(&d, id));	/* GEMM: alpha 1, beta 0 */
	d.in[0] = in0;
	d.out = out;
	if (in1)
		d.in[1] = *in1;
	CHECK(npurt_launch(s, &d));
}

static double gelu(double x)
{
	return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}

int main(void)
{
	npurt_device *dev;
	npurt_stream *s;
	npurt_mem *m;
	uint64_t base;
	float *f;
	double h[B][H], worst = 0;

	CHECK(npurt_device_open(0, &dev));
	CHECK(npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s));
	CHECK(npurt_mem_alloc(dev, 4 * TOTAL, &m));
	base = npurt_mem_device_addr(m);
	f = npurt_mem_host_ptr(m);
	srand(1);
	for (int i = 0; i < HID; i++)	/* inputs, weights, biases in [-0.5, 0.5) */
		f[i] = (float)rand() / RAND_MAX - 0.5f;

	npurt_tensor w1 = mat(base, W1, I, H), b1 = bias(base, B1, B, H);
	npurt_tensor w2 = mat(base, W2, H, O), b2 = bias(base, B2, B, O);

	launch(s, "gemm", mat(base, X, B, I), &w1, mat(base, HID, B, H));
	launch(s, "add", mat(base, HID, B, H), &b1, mat(base, HID, B, H));
	launch(s, "gelu", mat(base, HID, B, H), NULL, mat(base, HID, B, H));
	launch(s, "gemm", mat(base, HID, B, H), &w2, mat(base, Y, B, O));
	launch(s, "add", mat(base, Y, B, O), &b2, mat(base, Y, B, O));
	launch(s, "softmax", mat(base, Y, B, O), NULL, mat(base, Y, B, O));
	CHECK(npurt_stream_synchronize(s));

	for (int r = 0; r < B; r++) {
		double y[O], max = -INFINITY, sum = 0;

		for (int j = 0; j < H; j++) {
			double acc = f[B1 + j];

			for (int k = 0; k < I; k++)
				acc += (double)f[X + r * I + k] * f[W1 + k * H + j];
			h[r][j] = gelu(acc);
		}
		for (int j = 0; j < O; j++) {
			y[j] = f[B2 + j];
			for (int k = 0; k < H; k++)
				y[j] += h[r][k] * f[W2 + k * O + j];
			max = fmax(max, y[j]);
		}
		for (int j = 0; j < O; j++)
			sum += exp(y[j] - max);
		for (int j = 0; j < O; j++) {
			double want = exp(y[j] - max) / sum;

			worst = fmax(worst, fabs(want - f[Y + r * O + j]));
		}
	}
	if (worst > 1e-5) {
		fprintf(stderr, "mlp: the device's probabilities are off by %g\n", worst);
		return 1;
	}
	printf("mlp: %d rows of %d classes match the host within %.1e\n", B, O, worst);

	npurt_mem_free(m);
	npurt_stream_destroy(s);
	npurt_device_close(dev);
	return 0;
}
