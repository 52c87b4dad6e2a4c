/*
 * Unit tests for floor.h, run by bench/check:
 *   cc -O2 -Wall -o test_floor test_floor.c && ./test_floor
 */
#include "floor.h"

#include <assert.h>

/* Feeds `text` in pieces of `step` bytes and returns the terminators counted. */
static size_t count_in_steps(const char *text, size_t step)
{
	int matched = 0;
	size_t len = strlen(text), found = 0;
	for (size_t at = 0; at < len; at += step)
		found += floor_count_terminators(text + at, at + step > len ? len - at : step, &matched);
	return found;
}

int main(void)
{
	const char *two = "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n";
	/* Every split point, down to one byte per read, counts each terminator once. */
	for (size_t step = 1; step <= strlen(two); step++)
		assert(count_in_steps(two, step) == 2);
	/* "\r\r\n\r\n": the automaton restarts on the second '\r'. */
	assert(count_in_steps("x\r\r\n\r\n", 1) == 1);
	assert(count_in_steps("\r\n\r\r\n\r\n", 1) == 1);
	assert(count_in_steps("\r\n\r\n\r\n\r\n", 3) == 2);
	assert(count_in_steps("\n\r\n\r", 1) == 0);

	struct floor_response r = {0};
	floor_response_refresh(&r);
	assert(strlen(r.bytes) == FLOOR_RESPONSE_LEN);
	assert(!memcmp(r.bytes + FLOOR_RESPONSE_LEN - 13, "Hello, World!", 13));
	assert(strstr(r.bytes, " GMT\r\n\r\n") != NULL);
	puts("test_floor: ok");
	return 0;
}
