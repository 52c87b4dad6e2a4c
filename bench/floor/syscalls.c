/*
 * Which socket calls cost least per loopback round trip: write/read, writev/read, send/recv.
 *
 *   cc -O2 -o syscalls syscalls.c && taskset -c 1 ./syscalls 200000
 *
 * One thread, one loopback TCP connection, 100-byte messages: each round trip is a write on one
 * end, a read on the other, and back. The kernel's TCP work is the same whatever the call, so
 * the differences are the calls' own layers (`read`/`write` go through the file layer, `writev`
 * also imports an iovec, `send`/`recv` go straight to the socket). CPU time per round trip
 * (getrusage), every variant three times, interleaved. volt-rt's epoll streams use `recv` and
 * `send` because of what this printed (BENCHMARKS.md).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

enum { WRITE_READ, WRITEV_READ, SEND_READ, WRITEV_RECV, SEND_RECV, VARIANTS };
static const char *names[VARIANTS] = {"write/read", "writev/read", "send/read", "writev/recv",
				      "send/recv"};

static double cpu_us(void)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 +
	       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

static char msg[100], in[4096];

static void put(int variant, int fd)
{
	struct iovec v = {msg, sizeof msg};
	ssize_t n;
	if (variant == WRITE_READ)
		n = write(fd, msg, sizeof msg);
	else if (variant == WRITEV_READ || variant == WRITEV_RECV)
		n = writev(fd, &v, 1);
	else
		n = send(fd, msg, sizeof msg, MSG_NOSIGNAL);
	if (n != (ssize_t)sizeof msg)
		exit(1);
}

static void get(int variant, int fd)
{
	ssize_t n = variant >= WRITEV_RECV ? recv(fd, in, sizeof in, 0) : read(fd, in, sizeof in);
	if (n != (ssize_t)sizeof msg)
		exit(1);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200000, one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		return 1;
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a))
		return 1;
	int s = accept(l, NULL, NULL);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	for (int pass = 0; pass < 3; pass++) {
		for (int v = 0; v < VARIANTS; v++) {
			double t0 = cpu_us();
			for (int i = 0; i < rounds; i++) {
				put(v, c);
				get(v, s);
				put(v, s);
				get(v, c);
			}
			printf("%-12s %.3f us per round trip\n", names[v], (cpu_us() - t0) / rounds);
		}
	}
	return 0;
}
