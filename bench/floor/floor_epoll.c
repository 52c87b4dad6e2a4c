/*
 * floor_epoll: the epoll floor. Not a valid competitor, a physical-limit reference (see floor.h).
 *
 *   cc -O2 -Wall -Wextra -pthread -o floor_epoll floor_epoll.c
 *   ./floor_epoll --addr 127.0.0.1:8080 [--workers N] [--close]
 *
 * Each worker thread owns a SO_REUSEPORT listener and an epoll instance, level-triggered. On each
 * readable event it does ONE read (up to 64 KiB; level triggering reports the socket again if more
 * is waiting), counts the request terminators in it, and answers them all with ONE send of that many
 * copies of the fixed response. Output the kernel would not take is kept per connection and flushed
 * on EPOLLOUT. A connection holds no buffer while idle: reads go to a per-thread scratch buffer, so
 * the idle-connection figure is the kernel's socket cost alone.
 */
#include "floor.h"

#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>

#define READ_SIZE (64 * 1024)
#define MAX_EVENTS 256

struct connection {
	int fd;
	int matched;   /* progress through a "\r\n\r\n" split across reads */
	int closing;   /* close once pending output is flushed (--close) */
	char *pending; /* response bytes the kernel has not taken yet, or NULL */
	size_t pending_len;
	size_t pending_off;
};

struct worker {
	const struct floor_options *options;
	int listener;
	int epoll;
	struct floor_response response;
	char in[READ_SIZE];
	char *out; /* scratch for one batch of responses, grown as needed */
	size_t out_cap;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void connection_close(struct worker *w, struct connection *c)
{
	epoll_ctl(w->epoll, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->pending);
	free(c);
}

static void watch(struct worker *w, struct connection *c, int op, unsigned events)
{
	struct epoll_event ev = {.events = events, .data.ptr = c};
	if (epoll_ctl(w->epoll, op, c->fd, &ev))
		die("floor: epoll_ctl");
}

/* Sends what is pending. Returns 0 when all of it is out, 1 when some remains, -1 on error. */
static int connection_flush(struct worker *w, struct connection *c)
{
	while (c->pending_off < c->pending_len) {
		ssize_t n = send(c->fd, c->pending + c->pending_off, c->pending_len - c->pending_off,
				 MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN)
				return 1;
			if (errno == EINTR)
				continue;
			return -1;
		}
		c->pending_off += (size_t)n;
	}
	free(c->pending);
	c->pending = NULL;
	c->pending_len = c->pending_off = 0;
	watch(w, c, EPOLL_CTL_MOD, EPOLLIN);
	return 0;
}

/* Appends buf[0..len) to the pending output, asking for EPOLLOUT when there was none. */
static void connection_keep(struct worker *w, struct connection *c, const char *buf, size_t len)
{
	size_t old = c->pending_len - c->pending_off;
	char *p = malloc(old + len);
	if (!p)
		die("floor: malloc");
	if (old)
		memcpy(p, c->pending + c->pending_off, old);
	memcpy(p + old, buf, len);
	free(c->pending);
	if (!old)
		watch(w, c, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT);
	c->pending = p;
	c->pending_len = old + len;
	c->pending_off = 0;
}

/* Sends buf[0..len) in one send, keeping what the socket does not take (in order behind what
 * is already waiting). */
static int connection_send(struct worker *w, struct connection *c, const char *buf, size_t len)
{
	if (c->pending) {
		connection_keep(w, c, buf, len);
		return 0;
	}
	ssize_t n;
	do
		n = send(c->fd, buf, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN)
		return -1;
	if (n < 0)
		n = 0;
	if ((size_t)n < len)
		connection_keep(w, c, buf + n, len - (size_t)n);
	return 0;
}

/* Answers `count` requests: one send of `count` copies of the response. */
static int connection_respond(struct worker *w, struct connection *c, size_t count)
{
	size_t len = count * FLOOR_RESPONSE_LEN;
	if (len > w->out_cap) {
		w->out = realloc(w->out, len);
		if (!w->out)
			die("floor: realloc");
		w->out_cap = len;
	}
	for (size_t i = 0; i < count; i++)
		memcpy(w->out + i * FLOOR_RESPONSE_LEN, w->response.bytes, FLOOR_RESPONSE_LEN);
	return connection_send(w, c, w->out, len);
}

static void connection_event(struct worker *w, struct connection *c, unsigned events)
{
	if ((events & EPOLLOUT) && c->pending) {
		int r = connection_flush(w, c);
		if (r < 0 || (r == 0 && c->closing)) {
			connection_close(w, c);
			return;
		}
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	ssize_t n = read(c->fd, w->in, sizeof w->in);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		connection_close(w, c);
		return;
	}
	if (n < 0)
		return;
	if (w->options->echo) {
		if (connection_send(w, c, w->in, (size_t)n))
			connection_close(w, c);
		return;
	}
	size_t count = floor_count_terminators(w->in, (size_t)n, &c->matched);
	if (!count)
		return;
	if (connection_respond(w, c, count)) {
		connection_close(w, c);
		return;
	}
	if (w->options->close_after_response) {
		if (c->pending)
			c->closing = 1;
		else
			connection_close(w, c);
	}
}

static void accept_all(struct worker *w)
{
	for (;;) {
		int fd = accept4(w->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				perror("floor: accept4"); /* e.g. EMFILE: keep serving who we have */
			return;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct connection *c = calloc(1, sizeof *c);
		if (!c)
			die("floor: calloc");
		c->fd = fd;
		watch(w, c, EPOLL_CTL_ADD, EPOLLIN);
	}
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	w->listener = floor_listen(w->options);
	w->epoll = epoll_create1(EPOLL_CLOEXEC);
	if (w->epoll < 0)
		die("floor: epoll_create1");
	/* data.ptr == NULL marks the listener. */
	struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
	if (epoll_ctl(w->epoll, EPOLL_CTL_ADD, w->listener, &lev))
		die("floor: epoll_ctl listener");
	struct epoll_event events[MAX_EVENTS];
	for (;;) {
		/* Wake at least once a second so the Date moves even when idle. */
		int n = epoll_wait(w->epoll, events, MAX_EVENTS, 1000);
		if (n < 0 && errno != EINTR)
			die("floor: epoll_wait");
		floor_response_refresh(&w->response);
		for (int i = 0; i < n; i++) {
			if (events[i].data.ptr == NULL)
				accept_all(w);
			else
				connection_event(w, events[i].data.ptr, events[i].events);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct floor_options options;
	floor_parse_options(argc, argv, &options);
	signal(SIGPIPE, SIG_IGN);
	struct worker *workers = calloc((size_t)options.workers, sizeof *workers);
	if (!workers)
		die("floor: calloc");
	for (int i = 0; i < options.workers; i++) {
		workers[i].options = &options;
		floor_response_refresh(&workers[i].response);
	}
	fprintf(stderr, "floor_epoll: listening on %s:%d with %d worker(s)%s\n",
		inet_ntoa(options.addr.sin_addr), ntohs(options.addr.sin_port), options.workers,
		options.close_after_response ? ", closing after each response" : "");
	for (int i = 1; i < options.workers; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker_run, &workers[i]))
			die("floor: pthread_create");
	}
	worker_run(&workers[0]);
	return 0;
}
