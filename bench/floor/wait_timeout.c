/*
 * What a timeout on a sleeping io_uring_enter costs, by its length.
 *
 *   cc -O2 -o wait_timeout wait_timeout.c -luring -lpthread && ./wait_timeout 100000 3
 *
 * A waiter thread (CPU 0) sleeps in io_uring_enter until a multishot poll on an eventfd
 * completes, then answers on a second eventfd; a pinger thread (CPU 1) writes the first and
 * waits for the answer. Every enter sleeps, as a worker's does between requests at a moderate
 * rate. The waiter's CPU time per round trip (getrusage of its thread) is printed for waits with
 * no timeout and with timeouts of 1 ms to 1 s, interleaved, each ROUNDS times. volt-rt's io_uring
 * reactor once cut such waits after 1 ms; what this printed is why that limit is now 50 ms
 * (BENCHMARKS.md, run V): a timer that expires before the scheduler's next tick makes the kernel
 * reprogram its clock event device, which costs a VM exit in a guest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

static const long long timeouts_us[] = {0, 1000, 3000, 5000, 20000, 1000000};
enum { TIMEOUTS = sizeof timeouts_us / sizeof timeouts_us[0] };

static int ping_fd, pong_fd;
static long iterations;

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static double thread_cpu_us(void)
{
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
	return r.ru_utime.tv_sec * 1e6 + r.ru_utime.tv_usec + r.ru_stime.tv_sec * 1e6 +
	       r.ru_stime.tv_usec;
}

static void *pinger(void *arg)
{
	(void)arg;
	pin(1);
	uint64_t v = 1;
	for (long i = 0; i < iterations; i++) {
		if (write(ping_fd, &v, 8) != 8 || read(pong_fd, &v, 8) != 8)
			abort();
	}
	return NULL;
}

/* The waiter's CPU µs per round trip with waits of `timeout_us` (0: none). */
static double measure(long long timeout_us)
{
	struct io_uring ring;
	struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
	if (io_uring_queue_init_params(64, &ring, &p) < 0) {
		fprintf(stderr, "io_uring_queue_init_params failed\n");
		exit(1);
	}
	io_uring_prep_poll_multishot(io_uring_get_sqe(&ring), ping_fd, POLLIN);
	io_uring_submit(&ring);
	pthread_t thread;
	pthread_create(&thread, NULL, pinger, NULL);
	double start = thread_cpu_us();
	for (long i = 0; i < iterations; i++) {
		struct io_uring_cqe *cqe;
		int ret;
		if (timeout_us > 0) {
			struct __kernel_timespec ts = {timeout_us / 1000000, timeout_us % 1000000 * 1000};
			ret = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
		} else {
			ret = io_uring_submit_and_wait(&ring, 1);
		}
		if (ret < 0 && ret != -ETIME) {
			fprintf(stderr, "io_uring_enter: %d\n", ret);
			exit(1);
		}
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe) seen++;
		io_uring_cq_advance(&ring, seen);
		uint64_t v;
		if (read(ping_fd, &v, 8) != 8 || write(pong_fd, &v, 8) != 8)
			abort();
	}
	double per_trip = (thread_cpu_us() - start) / iterations;
	pthread_join(thread, NULL);
	io_uring_queue_exit(&ring);
	return per_trip;
}

int main(int argc, char **argv)
{
	iterations = argc > 1 ? atol(argv[1]) : 100000;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	ping_fd = eventfd(0, 0);
	pong_fd = eventfd(0, 0);
	pin(0);
	for (int round = 0; round < rounds; round++) {
		for (int t = 0; t < TIMEOUTS; t++) {
			printf("timeout %7lld us: %.2f us CPU per round trip\n", timeouts_us[t],
			       measure(timeouts_us[t]));
			fflush(stdout);
		}
	}
	return 0;
}
