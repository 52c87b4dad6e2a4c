/*
 * The client floor: the least a keep-alive HTTP/1.1 load generator can cost per request on epoll.
 *
 * Like the floor servers, NOT a valid tool. It learns the length of one response first (a fixed
 * server answers every request with a response of the same length: the Date header is
 * fixed-width), then keeps `-c` connections busy with `--pipeline` requests each, written in one
 * write, and counts answers by bytes read: no parsing, no latency recording. Per request it makes
 * what any epoll client must make: one write, one read (per pipelined batch) and its share of an
 * epoll_wait. Its CPU per request is the limit `volt bench` and wrk are compared against: what is
 * left above it is the client's own work, what is below it belongs to the kernel.
 *
 *   client_epoll --addr 127.0.0.1:8080 [--path /plaintext] [-c 64] [--pipeline 1] [-d 5]
 *
 * Prints one line: requests, seconds, requests/s, and its own user and system CPU µs per request
 * (getrusage), so it needs no outside timing.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 4096
#define READ_SIZE 65536

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_us(const struct timeval *t)
{
	return (double)t->tv_sec * 1e6 + (double)t->tv_usec;
}

static int connect_to(const struct sockaddr_in *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (const struct sockaddr *)addr, sizeof *addr))
		die("connect");
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			die("write");
		p += w;
		n -= (size_t)w;
	}
}

/* One request on a blocking connection: the length of its whole response (head + body). */
static size_t response_length(const struct sockaddr_in *addr, const char *req, size_t req_len)
{
	int fd = connect_to(addr);
	write_all(fd, req, req_len);
	char buf[READ_SIZE];
	size_t have = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
		if (r <= 0)
			die("reading the first response");
		have += (size_t)r;
		buf[have] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		size_t head = (size_t)(end + 4 - buf);
		size_t body = 0;
		for (char *line = strstr(buf, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n"))
			if (!strncasecmp(line + 2, "content-length:", 15))
				body = strtoul(line + 17, NULL, 10);
		if (have >= head + body) {
			close(fd);
			return head + body;
		}
	}
}

int main(int argc, char **argv)
{
	const char *addr_s = "127.0.0.1:8080", *path = "/plaintext";
	int conns = 64, depth = 1;
	double seconds = 5;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--addr"))
			addr_s = argv[i + 1];
		else if (!strcmp(argv[i], "--path"))
			path = argv[i + 1];
		else if (!strcmp(argv[i], "-c"))
			conns = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pipeline"))
			depth = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-d"))
			seconds = atof(argv[i + 1]);
		else {
			fprintf(stderr, "usage: %s --addr HOST:PORT [--path P] [-c N] [--pipeline N] [-d S]\n",
				argv[0]);
			return 2;
		}
	}
	if (conns < 1 || conns > MAX_CONNS || depth < 1 || depth > 64 || seconds <= 0) {
		fprintf(stderr, "%s: -c 1..%d, --pipeline 1..64, -d > 0\n", argv[0], MAX_CONNS);
		return 2;
	}
	struct sockaddr_in addr = {.sin_family = AF_INET};
	char host[64];
	const char *colon = strrchr(addr_s, ':');
	if (!colon || (size_t)(colon - addr_s) >= sizeof host)
		return 2;
	memcpy(host, addr_s, (size_t)(colon - addr_s));
	host[colon - addr_s] = '\0';
	addr.sin_port = htons((unsigned short)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
		return 2;

	/* TechEmpower's request headers, as bench/run gives wrk. */
	char one[1024];
	int one_len = snprintf(one, sizeof one,
			       "GET %s HTTP/1.1\r\nHost: tfb-server\r\n"
			       "Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,"
			       "application/xml;q=0.8,*/*;q=0.7\r\nConnection: keep-alive\r\n\r\n",
			       path);
	size_t batch_len = (size_t)one_len * (size_t)depth;
	char *batch = malloc(batch_len);
	for (int i = 0; i < depth; i++)
		memcpy(batch + (size_t)i * (size_t)one_len, one, (size_t)one_len);
	size_t answer = response_length(&addr, one, (size_t)one_len) * (size_t)depth;

	int ep = epoll_create1(0);
	static size_t received[MAX_CONNS];
	for (int i = 0; i < conns; i++) {
		int fd = connect_to(&addr);
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ((uint64_t)i << 32) | (uint32_t)fd};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			die("epoll_ctl");
		write_all(fd, batch, batch_len);
	}

	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	double start = now(), end = start + seconds;
	unsigned long long requests = 0;
	static char buf[READ_SIZE];
	struct epoll_event events[256];
	while (now() < end) {
		int n = epoll_wait(ep, events, 256, 100);
		for (int e = 0; e < n; e++) {
			int i = (int)(events[e].data.u64 >> 32), fd = (int)(uint32_t)events[e].data.u64;
			ssize_t r = read(fd, buf, sizeof buf);
			if (r <= 0) {
				if (r < 0 && errno == EAGAIN)
					continue;
				fprintf(stderr, "connection %d closed by the server\n", i);
				return 1;
			}
			received[i] += (size_t)r;
			/* A whole batch answered: count it and send the next. */
			if (received[i] >= answer) {
				received[i] -= answer;
				requests += (unsigned long long)depth;
				write_all(fd, batch, batch_len);
			}
		}
	}
	double elapsed = now() - start;
	getrusage(RUSAGE_SELF, &r1);
	double user = cpu_us(&r1.ru_utime) - cpu_us(&r0.ru_utime);
	double sys = cpu_us(&r1.ru_stime) - cpu_us(&r0.ru_stime);
	printf("client_epoll: %llu requests in %.2f s, %.0f req/s, user %.3f us/req, sys %.3f us/req, "
	       "total %.3f us/req\n",
	       requests, elapsed, (double)requests / elapsed, user / (double)requests,
	       sys / (double)requests, (user + sys) / (double)requests);
	return 0;
}
