/*
 * What every floor server shares, whatever its I/O interface (floor_epoll.c today; an io_uring
 * floor would include this too): options, the listener, the canned response with its Date, and the
 * request-terminator counter. Everything is `static inline`: each floor is one translation unit.
 *
 * A floor server is NOT a valid competitor. It does not parse requests: it counts "\r\n\r\n" and
 * answers each with the same plaintext response. What it costs per request is roughly what the
 * kernel's socket calls cost, the physical limit for a server on that I/O interface, and bench/run
 * reports every real server as a ratio to it.
 */
#ifndef FLOOR_H
#define FLOOR_H

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- options ---------------------------------------------------------------------------------- */

struct floor_options {
	struct sockaddr_in addr;
	int workers;
	/* Close each connection once its requests are answered: the new-connection scenario's client
	 * (ab, HTTP/1.0 without keep-alive) waits for the server to close. */
	int close_after_response;
	/* Echo every byte back instead of answering HTTP: the runtime ping-pong scenario's floor. */
	int echo;
};

static inline void floor_usage(const char *me, const char *problem)
{
	fprintf(stderr,
		"%s: %s\n"
		"usage: %s [--addr HOST:PORT | -a HOST:PORT] [--workers N | -w N] [--close | -c] [--echo]\n",
		me, problem, me);
	exit(2);
}

static inline void floor_parse_options(int argc, char **argv, struct floor_options *o)
{
	const char *addr = "127.0.0.1:8080";
	o->workers = 1;
	o->close_after_response = 0;
	o->echo = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--close") || !strcmp(a, "-c")) {
			o->close_after_response = 1;
		} else if (!strcmp(a, "--echo")) {
			o->echo = 1;
		} else if (!strcmp(a, "--addr") || !strcmp(a, "-a")) {
			if (++i == argc)
				floor_usage(argv[0], "--addr needs a value");
			addr = argv[i];
		} else if (!strcmp(a, "--workers") || !strcmp(a, "-w")) {
			if (++i == argc)
				floor_usage(argv[0], "--workers needs a value");
			o->workers = atoi(argv[i]);
			if (o->workers < 1 || o->workers > 256)
				floor_usage(argv[0], "--workers must be 1..256");
		} else {
			floor_usage(argv[0], "unknown option");
		}
	}
	char host[64];
	const char *colon = strrchr(addr, ':');
	if (!colon || (size_t)(colon - addr) >= sizeof host)
		floor_usage(argv[0], "--addr must be IPv4 HOST:PORT");
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	memset(&o->addr, 0, sizeof o->addr);
	o->addr.sin_family = AF_INET;
	o->addr.sin_port = htons((unsigned short)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &o->addr.sin_addr) != 1)
		floor_usage(argv[0], "--addr must be IPv4 HOST:PORT");
}

/* A nonblocking listener with SO_REUSEPORT, one per worker thread: the kernel spreads connections
 * across them, and the workers share nothing. TCP_DEFER_ACCEPT (1 s), as volt and h2o set it: a
 * connection is handed over once its request arrived, so accepting costs no extra wakeup. */
static inline int floor_listen(const struct floor_options *o)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof one) ||
	    bind(fd, (const struct sockaddr *)&o->addr, sizeof o->addr) || listen(fd, 4096)) {
		perror("floor: listen");
		exit(1);
	}
	return fd;
}

/* ---- the response ----------------------------------------------------------------------------- */

#define FLOOR_DATE_LEN 29 /* "Sun, 06 Nov 1994 08:49:37 GMT" */
#define FLOOR_RESPONSE_HEAD                                                                        \
	"HTTP/1.1 200 OK\r\n"                                                                      \
	"Server: floor\r\n"                                                                        \
	"Content-Type: text/plain\r\n"                                                             \
	"Content-Length: 13\r\n"                                                                   \
	"Date: "
#define FLOOR_RESPONSE_TAIL "\r\n\r\nHello, World!"
#define FLOOR_RESPONSE_LEN                                                                         \
	(sizeof FLOOR_RESPONSE_HEAD - 1 + FLOOR_DATE_LEN + sizeof FLOOR_RESPONSE_TAIL - 1)

/* The response bytes, per worker thread, with the Date re-rendered when the second changes. */
struct floor_response {
	time_t rendered_at;
	char bytes[FLOOR_RESPONSE_LEN + 1];
};

static inline void floor_response_refresh(struct floor_response *r)
{
	time_t now = time(NULL);
	if (now == r->rendered_at)
		return;
	struct tm tm;
	char date[FLOOR_DATE_LEN + 1];
	gmtime_r(&now, &tm);
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	memcpy(r->bytes, FLOOR_RESPONSE_HEAD, sizeof FLOOR_RESPONSE_HEAD - 1);
	memcpy(r->bytes + sizeof FLOOR_RESPONSE_HEAD - 1, date, FLOOR_DATE_LEN);
	memcpy(r->bytes + sizeof FLOOR_RESPONSE_HEAD - 1 + FLOOR_DATE_LEN, FLOOR_RESPONSE_TAIL,
	       sizeof FLOOR_RESPONSE_TAIL - 1);
	r->rendered_at = now;
}

/* ---- counting requests ------------------------------------------------------------------------ */

/* Counts "\r\n\r\n" in buf. *matched (0..3) is how much of a terminator the previous read ended
 * with, so a terminator split across two reads is counted once. On a mismatch the only prefix of
 * "\r\n\r\n" the byte can restart is "\r", so the automaton falls back to 1 on '\r', else 0. */
static inline size_t floor_count_terminators(const char *buf, size_t len, int *matched)
{
	static const char terminator[4] = {'\r', '\n', '\r', '\n'};
	size_t found = 0;
	int m = *matched;
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		if (c == terminator[m]) {
			if (++m == 4) {
				found++;
				m = 0;
			}
		} else {
			m = (c == '\r');
		}
	}
	*matched = m;
	return found;
}

#endif
