/* The smallest program that can sit between an MCP client and a stdio server: it starts the
 * server and copies bytes both ways from one poll loop, reading and changing nothing. The
 * serve bench (serve.mjs) times a call through it beside the same call sent straight, so the
 * cost of any process in the middle on this machine (two more wake-ups, four more copies) is
 * measured, not guessed. Usage: relay <command> [args...] */
#include <poll.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* Writes all of `len` bytes, or returns -1. */
static int write_all(int fd, const char *buf, ssize_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, (size_t)len);
        if (n <= 0) return -1;
        buf += n;
        len -= n;
    }
    return 0;
}

int main(int argc, char **argv) {
    int to_server[2], from_server[2];
    if (argc < 2 || pipe(to_server) != 0 || pipe(from_server) != 0) {
        fprintf(stderr, "usage: relay <command> [args...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        dup2(to_server[0], 0);
        dup2(from_server[1], 1);
        close(to_server[1]);
        close(from_server[0]);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    close(to_server[0]);
    close(from_server[1]);
    struct pollfd fds[2] = {{0, POLLIN, 0}, {from_server[0], POLLIN, 0}};
    static char buf[1 << 16];
    for (;;) {
        if (poll(fds, 2, -1) < 0) continue;
        if (fds[0].revents) {
            ssize_t n = read(0, buf, sizeof buf);
            if (n <= 0 || write_all(to_server[1], buf, n) != 0) break;
        }
        if (fds[1].revents) {
            ssize_t n = read(from_server[0], buf, sizeof buf);
            if (n <= 0 || write_all(1, buf, n) != 0) break;
        }
    }
    close(to_server[1]);
    waitpid(pid, 0, 0);
    return 0;
}
