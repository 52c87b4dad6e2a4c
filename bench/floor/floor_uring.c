/*
 * floor_uring: the io_uring floor. Not a valid competitor, a physical-limit reference (see floor.h).
 *
 *   apt-get install -y liburing-dev      # liburing 2.3 on Debian bookworm
 *   cc -O2 -Wall -Wextra -pthread -o floor_uring floor_uring.c -luring
 *   ./floor_uring --addr 127.0.0.1:8080 [--workers N] [--close]
 *
 * Each worker thread owns a SO_REUSEPORT listener and a ring, set up with
 * IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (falling back to COOP_TASKRUN, then to
 * no flags, when the kernel refuses). The listener has one multishot accept; every connection has
 * one multishot recv that takes its buffers from a provided-buffer ring shared by the worker (so,
 * like the epoll floor, an idle connection holds no buffer). Each receive completion is counted for
 * "\r\n\r\n" and answered with ONE send of that many copies of the fixed response; its buffer goes
 * straight back to the ring. A connection has at most one send in flight: requests that arrive
 * meanwhile are answered by the next send, when that one completes. The loop does one
 * io_uring_submit_and_wait per turn (with a 1 s timeout, so the Date moves when idle).
 *
 * Kernel features probed, with fallbacks: multishot accept (5.19) and multishot recv (6.0) turn
 * into re-armed single-shot operations when the kernel answers -EINVAL; the buffer ring (5.19) is
 * required.
 */
#include "floor.h"

#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define RING_ENTRIES 4096     /* submission queue */
#define CQ_ENTRIES (4 * 4096) /* completion queue */
#ifndef BUF_COUNT
#define BUF_COUNT 512 /* provided buffers per worker (a power of two; > the 256 connections of the pipelined load) */
#endif
#ifndef BUF_SIZE
#define BUF_SIZE (8 * 1024) /* bytes per buffer: a 16-deep TechEmpower batch (~3 KB) fits in one */
#endif
#define BUF_GROUP 0

/* user_data: a connection pointer with the operation in its low bits; the listener is NULL. */
enum { OP_ACCEPT = 0, OP_RECV = 1, OP_SEND = 2 };
#define OP_MASK 3ULL

struct connection {
	int fd;
	int matched;       /* progress through a "\r\n\r\n" split across reads */
	int recv_armed;    /* a (multishot) recv is outstanding */
	int send_inflight; /* a send is outstanding; its buffer is `out` */
	int dead;          /* answer nothing more; free once nothing is outstanding */
	int closing;       /* --close: shut down once the output is out */
	size_t queued;     /* requests counted while a send was in flight */
	char *out;
	size_t out_len;
	size_t out_off;
	char *next; /* --echo: bytes received while a send was in flight, sent when it completes */
	size_t next_len;
};

struct worker {
	const struct floor_options *options;
	int listener;
	struct io_uring ring;
	struct io_uring_buf_ring *bufs;
	char *buf_base;
	int multishot_accept;
	int multishot_recv;
	unsigned buffers_returned; /* this turn, published with one io_uring_buf_ring_advance */
	struct floor_response response;
};

#ifdef FIXED_FILES
/* -DFIXED_FILES=N (one worker only): receives and sends on a registered file table of N slots,
 * slot = descriptor, each connection registered with one io_uring_register_files_update. An
 * experiment (docs/why-io-uring.md: it measured nothing), not how bench/run builds the floor. */
static struct io_uring *fixed_ring;
#endif

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void die_errno(const char *what, int err)
{
	errno = err;
	die(what);
}

static struct io_uring_sqe *sqe_get(struct worker *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
	if (!sqe) { /* queue full: hand what is there to the kernel now */
		io_uring_submit(&w->ring);
		sqe = io_uring_get_sqe(&w->ring);
		if (!sqe)
			die_errno("floor: io_uring_get_sqe", EBUSY);
	}
	return sqe;
}

static void arm_accept(struct worker *w)
{
	struct io_uring_sqe *sqe = sqe_get(w);
	if (w->multishot_accept)
		io_uring_prep_multishot_accept(sqe, w->listener, NULL, NULL, SOCK_CLOEXEC);
	else
		io_uring_prep_accept(sqe, w->listener, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, OP_ACCEPT);
}

static void arm_recv(struct worker *w, struct connection *c)
{
	struct io_uring_sqe *sqe = sqe_get(w);
	if (w->multishot_recv)
		io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
	else
		io_uring_prep_recv(sqe, c->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
#ifdef FIXED_FILES
	sqe->flags |= IOSQE_FIXED_FILE;
#endif
	sqe->buf_group = BUF_GROUP;
	io_uring_sqe_set_data64(sqe, (__u64)(uintptr_t)c | OP_RECV);
	c->recv_armed = 1;
}

static void arm_send(struct worker *w, struct connection *c)
{
	struct io_uring_sqe *sqe = sqe_get(w);
	io_uring_prep_send(sqe, c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
#ifdef FIXED_FILES
	sqe->flags |= IOSQE_FIXED_FILE;
#endif
	io_uring_sqe_set_data64(sqe, (__u64)(uintptr_t)c | OP_SEND);
	c->send_inflight = 1;
}

/* Frees the connection once the kernel holds no operation on it. */
static void connection_release(struct connection *c)
{
	if (c->recv_armed || c->send_inflight)
		return;
#ifdef FIXED_FILES
	int none = -1; /* the table holds the socket open until its slot is emptied */
	io_uring_register_files_update(fixed_ring, (unsigned)c->fd, &none, 1);
#endif
	close(c->fd);
	free(c->out);
	free(c->next);
	free(c);
}

/* Stops the connection: no more answers, and the outstanding recv ends (with 0) on the shutdown,
 * since closing the fd alone would not cancel an operation the ring holds. */
static void connection_kill(struct connection *c)
{
	if (!c->dead) {
		c->dead = 1;
		shutdown(c->fd, SHUT_RDWR);
	}
	connection_release(c);
}

/* Answers `count` requests with one send of `count` copies of the response. */
static void connection_respond(struct worker *w, struct connection *c, size_t count)
{
	if (c->send_inflight) { /* keep order: the next send carries these */
		c->queued += count;
		return;
	}
	size_t len = count * FLOOR_RESPONSE_LEN;
	c->out = malloc(len);
	if (!c->out)
		die("floor: malloc");
	for (size_t i = 0; i < count; i++)
		memcpy(c->out + i * FLOOR_RESPONSE_LEN, w->response.bytes, FLOOR_RESPONSE_LEN);
	c->out_len = len;
	c->out_off = 0;
	arm_send(w, c);
}

/* --echo: sends buf[0..len) back, after what is in flight. */
static void connection_echo(struct worker *w, struct connection *c, const char *buf, size_t len)
{
	char **to = c->send_inflight ? &c->next : &c->out;
	size_t *to_len = c->send_inflight ? &c->next_len : &c->out_len;
	*to = realloc(*to, *to_len + len);
	if (!*to)
		die("floor: realloc");
	memcpy(*to + *to_len, buf, len);
	*to_len += len;
	if (!c->send_inflight) {
		c->out_off = 0;
		arm_send(w, c);
	}
}

static void on_accept(struct worker *w, struct io_uring_cqe *cqe)
{
	if (!(cqe->flags & IORING_CQE_F_MORE)) {
		if (cqe->res == -EINVAL && w->multishot_accept) {
			w->multishot_accept = 0; /* kernel before 5.19 */
			fprintf(stderr, "floor_uring: no multishot accept, re-arming single accepts\n");
		}
		arm_accept(w);
	}
	if (cqe->res < 0) {
		if (cqe->res != -EINVAL && cqe->res != -ECONNABORTED && cqe->res != -EINTR)
			fprintf(stderr, "floor: accept: %s\n", strerror(-cqe->res)); /* e.g. EMFILE */
		return;
	}
	int fd = cqe->res, one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct connection *c = calloc(1, sizeof *c);
	if (!c)
		die("floor: calloc");
	c->fd = fd;
#ifdef FIXED_FILES
	if (io_uring_register_files_update(&w->ring, (unsigned)fd, &fd, 1) != 1)
		die("floor: io_uring_register_files_update");
#endif
	arm_recv(w, c);
}

static void on_recv(struct worker *w, struct connection *c, struct io_uring_cqe *cqe)
{
	int more = (cqe->flags & IORING_CQE_F_MORE) != 0;
	if (!more)
		c->recv_armed = 0;
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		char *buf = w->buf_base + (size_t)bid * BUF_SIZE;
		if (cqe->res > 0 && !c->dead && w->options->echo) {
			connection_echo(w, c, buf, (size_t)cqe->res);
		} else if (cqe->res > 0 && !c->dead) {
			size_t count = floor_count_terminators(buf, (size_t)cqe->res, &c->matched);
			if (count)
				connection_respond(w, c, count);
		}
		io_uring_buf_ring_add(w->bufs, buf, BUF_SIZE, (unsigned short)bid,
				      io_uring_buf_ring_mask(BUF_COUNT), (int)w->buffers_returned++);
	}
	if (more)
		return;
	if (cqe->res == -EINVAL && w->multishot_recv) {
		w->multishot_recv = 0; /* kernel before 6.0 */
		fprintf(stderr, "floor_uring: no multishot recv, re-arming single recvs\n");
	}
	/* Ended: by the peer (0), an error, or (single-shot, or out of buffers) to be re-armed. */
	if (!c->dead && (cqe->res > 0 || cqe->res == -ENOBUFS || cqe->res == -EINVAL)) {
		arm_recv(w, c);
		return;
	}
	connection_kill(c);
}

static void on_send(struct worker *w, struct connection *c, struct io_uring_cqe *cqe)
{
	c->send_inflight = 0;
	if (cqe->res < 0 || c->dead) {
		connection_kill(c);
		return;
	}
	c->out_off += (size_t)cqe->res;
	if (c->out_off < c->out_len) { /* short send: the rest first */
		arm_send(w, c);
		return;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = 0;
	if (c->next_len) { /* --echo: what arrived meanwhile */
		c->out = c->next;
		c->out_len = c->next_len;
		c->out_off = 0;
		c->next = NULL;
		c->next_len = 0;
		arm_send(w, c);
	} else if (c->queued) {
		size_t count = c->queued;
		c->queued = 0;
		connection_respond(w, c, count);
	} else if (w->options->close_after_response) {
		connection_kill(c);
	}
}

static void ring_setup(struct worker *w)
{
	/* Strongest first; older kernels refuse flags they do not know with -EINVAL. */
	static const struct {
		unsigned flags;
		const char *name;
	} tries[] = {
		{IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "SINGLE_ISSUER|DEFER_TASKRUN"},
		{IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"},
		{0, "no setup flags"},
	};
	int ret = -EINVAL;
	const char *chosen = NULL;
	for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
		struct io_uring_params p;
		memset(&p, 0, sizeof p);
		p.flags = tries[i].flags | IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE;
		p.cq_entries = CQ_ENTRIES;
		ret = io_uring_queue_init_params(RING_ENTRIES, &w->ring, &p);
		if (ret == -EINVAL) { /* maybe SUBMIT_ALL (5.18) is what it does not know */
			memset(&p, 0, sizeof p);
			p.flags = tries[i].flags | IORING_SETUP_CQSIZE;
			p.cq_entries = CQ_ENTRIES;
			ret = io_uring_queue_init_params(RING_ENTRIES, &w->ring, &p);
		}
		if (ret == 0) {
			chosen = tries[i].name;
			break;
		}
		if (ret != -EINVAL)
			break;
	}
	if (ret < 0)
		die_errno("floor: io_uring_queue_init_params", -ret);
	if (!(w->ring.features & IORING_FEAT_FAST_POLL))
		fprintf(stderr, "floor_uring: kernel lacks IORING_FEAT_FAST_POLL; expect io-wq threads\n");
#ifdef FIXED_FILES
	fixed_ring = &w->ring;
	if (io_uring_register_files_sparse(&w->ring, FIXED_FILES) < 0)
		die("floor: io_uring_register_files_sparse");
#endif
	io_uring_register_ring_fd(&w->ring); /* optional (5.18): saves an fd lookup per enter */

	/* The provided-buffer ring (liburing 2.3 has no io_uring_setup_buf_ring: done by hand). */
	size_t ring_bytes = BUF_COUNT * sizeof(struct io_uring_buf);
	w->bufs = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (w->bufs == MAP_FAILED)
		die("floor: mmap buffer ring");
	struct io_uring_buf_reg reg;
	memset(&reg, 0, sizeof reg);
	reg.ring_addr = (__u64)(uintptr_t)w->bufs;
	reg.ring_entries = BUF_COUNT;
	reg.bgid = BUF_GROUP;
	ret = io_uring_register_buf_ring(&w->ring, &reg, 0);
	if (ret < 0) {
		fprintf(stderr, "floor_uring: the kernel has no provided-buffer ring (needs 5.19)\n");
		die_errno("floor: io_uring_register_buf_ring", -ret);
	}
	w->buf_base = mmap(NULL, (size_t)BUF_COUNT * BUF_SIZE, PROT_READ | PROT_WRITE,
			   MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (w->buf_base == MAP_FAILED)
		die("floor: mmap buffers");
	io_uring_buf_ring_init(w->bufs);
	for (unsigned i = 0; i < BUF_COUNT; i++)
		io_uring_buf_ring_add(w->bufs, w->buf_base + (size_t)i * BUF_SIZE, BUF_SIZE,
				      (unsigned short)i, io_uring_buf_ring_mask(BUF_COUNT), (int)i);
	io_uring_buf_ring_advance(w->bufs, BUF_COUNT);
	static int said;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "floor_uring: ring with %s\n", chosen);
}

/* An experiment, not how bench/run runs the floor (BENCHMARKS.md, run U): FLOOR_BATCH=N
 * FLOOR_MIN_WAIT_US=US make each enter wait for N completions, but return once US microseconds
 * have passed if any arrived (`min_wait_usec` of IORING_ENTER_EXT_ARG, Linux 6.13): fewer
 * wake-ups, each answered request later. liburing 2.3 has no call for it, so the enter is made
 * here, with the submission queue's tail published as liburing would. */
static unsigned batch_wait = 1, batch_min_wait_us;

static int submit_and_wait_batch(struct io_uring *ring, struct __kernel_timespec *ts)
{
	struct io_uring_sq *sq = &ring->sq;
	sq->sqe_head = sq->sqe_tail;
	io_uring_smp_store_release(sq->ktail, sq->sqe_tail);
	unsigned submit = sq->sqe_tail - *sq->khead;
	/* Positional: liburing 2.3 calls the third field `pad`, later headers `min_wait_usec`. */
	struct io_uring_getevents_arg arg = {0, _NSIG / 8, batch_min_wait_us, (__u64)(uintptr_t)ts};
	int ret = (int)syscall(__NR_io_uring_enter, ring->ring_fd, submit, batch_wait,
			       IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof arg);
	return ret < 0 ? -errno : ret;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	w->listener = floor_listen(w->options);
	/* The ring polls for readiness itself; a nonblocking listener would only add -EAGAINs. */
	fcntl(w->listener, F_SETFL, fcntl(w->listener, F_GETFL) & ~O_NONBLOCK);
	w->multishot_accept = 1;
	w->multishot_recv = 1;
	ring_setup(w);
	arm_accept(w);
	for (;;) {
		/* One enter per turn: submits what the last turn queued, waits for at least one
		 * completion, and wakes at least once a second so the Date moves even when idle. */
		struct __kernel_timespec ts = {.tv_sec = 1, .tv_nsec = 0};
		struct io_uring_cqe *cqe;
		int ret = batch_wait > 1 ? submit_and_wait_batch(&w->ring, &ts)
					 : io_uring_submit_and_wait_timeout(&w->ring, &cqe, 1, &ts, NULL);
		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			die_errno("floor: io_uring_submit_and_wait_timeout", -ret);
		floor_response_refresh(&w->response);
		unsigned head, seen = 0;
		w->buffers_returned = 0;
		io_uring_for_each_cqe(&w->ring, head, cqe)
		{
			seen++;
			__u64 data = io_uring_cqe_get_data64(cqe);
			struct connection *c = (struct connection *)(uintptr_t)(data & ~OP_MASK);
			switch (data & OP_MASK) {
			case OP_ACCEPT:
				on_accept(w, cqe);
				break;
			case OP_RECV:
				on_recv(w, c, cqe);
				break;
			case OP_SEND:
				on_send(w, c, cqe);
				break;
			}
		}
		io_uring_buf_ring_advance(w->bufs, (int)w->buffers_returned);
		io_uring_cq_advance(&w->ring, seen);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct floor_options options;
	floor_parse_options(argc, argv, &options);
	if (getenv("FLOOR_BATCH"))
		batch_wait = (unsigned)atoi(getenv("FLOOR_BATCH"));
	if (getenv("FLOOR_MIN_WAIT_US"))
		batch_min_wait_us = (unsigned)atoi(getenv("FLOOR_MIN_WAIT_US"));
	signal(SIGPIPE, SIG_IGN);
	struct worker *workers = calloc((size_t)options.workers, sizeof *workers);
	if (!workers)
		die("floor: calloc");
	for (int i = 0; i < options.workers; i++) {
		workers[i].options = &options;
		floor_response_refresh(&workers[i].response);
	}
	fprintf(stderr, "floor_uring: listening on %s:%d with %d worker(s)%s\n",
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
