/* cachefsd: a caching NFSv3 proxy.
 *
 * Start-up order, so that nothing is half-started: configuration, cache
 * directory, upstream (mounted and answering), listener, registration
 * with a local rpcbind; only then does the daemon detach. Any failure
 * before that exits non-zero with a message that names what is wrong. */
#include "config.h"
#include "control.h"
#include "engine.h"
#include "files.h"
#include "locks.h"
#include "log.h"
#include "loop.h"
#include "nsm.h"
#include "proto.h"
#include "rpcbind.h"
#include "sdnotify.h"
#include "store.h"
#include "origin.h"
#include "peers.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "version.h"

static volatile sig_atomic_t sig_stats;
static volatile sig_atomic_t sig_reload;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		sig_stats = 1;
	else if (sig == SIGHUP)
		sig_reload = 1;
	else
		loop_signal_stop(); /* also ends a start's waits (loop.h) */
}

struct daemon {
	struct cfs_config cfg;
	struct loop *loop;
	struct origin *up;
	struct peers *peers; /* the fleet (include/peers.h), or NULL */
	struct engine *engine;
	struct proto_server *srv;
	struct locks *locks; /* NLM forwarded to the filer */
	/* operator interfaces (control.c, metrics.c) */
	struct ops_env ops;
	struct control *ctl;
	struct metrics *metrics;
	struct rpcbind_reg *reg; /* what is registered with rpcbind (rpcbind.h) */
	int argc;
	char **argv; /* for reloads: --config made absolute */
};

/* SIGUSR1: the table to the log, every counter to <cache_dir>/stats. */
static void write_stats_file(struct daemon *d)
{
	static unsigned long long seq;
	char path[4200], tmp[4300];
	FILE *f;

	if (d->cfg.stats_file)
		snprintf(path, sizeof(path), "%s", d->cfg.stats_file);
	else
		snprintf(path, sizeof(path), "%s/stats", d->cfg.cache_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = cfs_fopen_nofollow(tmp, "w");
	if (f == NULL) {
		log_warn("cannot write %s: %s", tmp, strerror(errno));
		return;
	}
	fprintf(f, "seq %d.%llu\n", (int)getpid(), ++seq); /* unique across restarts */
	ops_write_stats(&d->ops, f); /* the same lines as cachefsctl stats */
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		log_warn("cannot write %s: %s", path, strerror(errno));
}

static void dump_stats(struct daemon *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const struct upstream_counters *u = origin_counters(d->up);

	if (f == NULL)
		return;
	fprintf(f, "stats:\n");
	engine_dump_stats(d->engine, f);
	fprintf(f, "clients connected        %d\n", proto_client_count(d->srv));
	fprintf(f, "calls received           %llu\n", (unsigned long long)proto_counters.calls);
	fprintf(f, "garbage/rejected/auth    %llu/%llu/%llu\n",
		(unsigned long long)proto_counters.garbage_args,
		(unsigned long long)proto_counters.rpc_rejects,
		(unsigned long long)proto_counters.auth_errors);
	fprintf(f, "upstream calls/resends   %llu/%llu\n", (unsigned long long)u->calls,
		(unsigned long long)u->resends);
	fprintf(f,
	        "upstream connections     %d/%d up, %llu reconnects, %llu connect attempts, %d "
	        "calls waiting\n",
	        u->conns_up, u->conns_total, (unsigned long long)u->reconnects,
	        (unsigned long long)u->connect_attempts, u->waiting);
	fclose(f);
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		log_info("%s", line);
	free(buf);
}

/* Each line of a configuration's notes (values a later file overrode)
 * or errors to the log. */
static void log_lines(int level, const char *prefix, const char *text)
{
	while (text && *text) {
		size_t n = strcspn(text, "\n");
		log_msg(level, "%s%.*s", prefix, (int)n, text);
		text += n + (text[n] == '\n');
	}
}

/* SIGHUP, cachefsctl reload: the configuration is read again (file and
 * flags, as at start); keys that can change while running take effect,
 * the others are named as needing a restart. A mistake in any file (the
 * include directory's too) changes nothing, and every error is logged. */
static int reload_config(void *arg, char *msg, size_t len)
{
	struct daemon *d = arg;
	struct cfs_config n;
	enum config_action act;
	char err[8192], changed[2048], restart[1024];
	const char *from = d->cfg.config_file ? d->cfg.config_file : "the command line";

	sdnotify_reloading(); /* READY=1 follows, whatever the outcome */
	config_defaults(&n);
	if (config_parse_args(&n, d->argc, d->argv, &act, err, sizeof(err)) != 0) {
		/* every error, one line each; the reply has them on one line */
		log_lines(CFS_LOG_ERR, "configuration reload failed, the running configuration stays: ",
			  err);
		msg[0] = 0;
		for (const char *p = err; *p;) {
			size_t ll = strcspn(p, "\n"), used = strlen(msg);
			snprintf(msg + used, len - used, "%s%.*s", used ? "; " : "", (int)ll, p);
			p += ll + (p[ll] == '\n');
		}
		config_free(&n);
		control_counters.reload_failures++;
		sdnotify_reloaded();
		return -EINVAL;
	}
	if (n.cache_dir) { /* compared as the daemon uses it */
		char *abs = realpath(n.cache_dir, NULL);
		if (abs) {
			free(n.cache_dir);
			n.cache_dir = abs;
		}
	}
	log_lines(CFS_LOG_INFO, "configuration: ", n.notes);
	config_apply_live(&d->cfg, &n, changed, sizeof(changed), restart, sizeof(restart));
	config_free(&n);
	log_set_level(d->cfg.log_level);
	engine_reconfigure(d->engine);
	control_counters.reloads++;
	snprintf(msg, len, "%s%s%s", changed[0] ? changed : "nothing changed",
		 restart[0] ? "; needs a restart: " : "", restart);
	log_info("configuration reloaded from %s: %s", from, msg);
	sdnotify_reloaded();
	return 0;
}

static void before_sleep(struct loop *l, void *arg)
{
	struct daemon *d = arg;

	if (sig_reload) {
		char msg[2048];

		sig_reload = 0;
		reload_config(d, msg, sizeof(msg));
	}
	if (sig_stats) {
		sig_stats = 0;
		dump_stats(d);
		write_stats_file(d);
	}
	if (loop_stop_signalled())
		loop_stop(l);
}

static void log_tick(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
	log_limit_flush();
}

/* Network and FUSE filesystems are refused: LMDB needs local file locking
 * and mmap coherence, and a cache on the network defeats its purpose. */
static const char *remote_fs_name(long type)
{
	switch ((unsigned long)type) {
	case 0x6969UL:
		return "NFS";
	case 0x65735546UL:
		return "FUSE";
	case 0xFF534D42UL:
		return "CIFS";
	case 0xFE534D42UL:
		return "SMB2";
	case 0x517BUL:
		return "SMB";
	case 0x564c:
		return "NCP";
	case 0x73757245UL:
		return "CODA";
	case 0x00c36400UL:
		return "CEPH";
	case 0x47504653UL:
		return "GPFS";
	default:
		return NULL;
	}
}

static int prepare_cache_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	struct statfs sfs;
	char probe[4096];
	int fd;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cache_dir %s: cannot create: %s", dir, strerror(errno));
		return -errno;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "cache_dir %s: not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		/* the store refuses it too; said here, before "not writable",
		 * with the fix (a cache made by root, run as a service user) */
		char *abs = realpath(dir, NULL);
		int rc = store_refuse_owner(abs ? abs : dir, abs ? abs : dir, st.st_uid, err,
		                            errlen);

		free(abs);
		return rc;
	}
	if (statfs(dir, &sfs) == 0 && remote_fs_name(sfs.f_type)) {
		snprintf(err, errlen,
			 "cache_dir %s: is on %s; the cache must be on a local filesystem (ext4)",
			 dir, remote_fs_name(sfs.f_type));
		return -EINVAL;
	}
	snprintf(probe, sizeof(probe), "%s/.probe.%d", dir, (int)getpid());
	fd = open(probe, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cache_dir %s: not writable: %s", dir, strerror(errno));
		return -EACCES;
	}
	close(fd);
	unlink(probe);
	return 0;
}

static int write_pid_file(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		int e = errno; /* logging may change errno */

		log_err("pid_file %s: %s", path, strerror(e));
		return -e;
	}
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	return 0;
}

/* Detaching happens before anything else is set up (LMDB must be opened in
 * the process that uses it), but the command must still fail with the
 * reason when start-up fails: the parent waits on a pipe for the child's
 * verdict, an empty message meaning "serving". */
static int ready_fd = -1;

static int daemonize_early(void)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		char msg[1100];
		ssize_t n, got = 0;

		close(p[1]);
		while (got < (ssize_t)sizeof(msg) - 1 &&
		       (n = read(p[0], msg + got, sizeof(msg) - 1 - (size_t)got)) > 0)
			got += n;
		msg[got] = 0;
		if (got > 0 && msg[0] == 0)
			_exit(0); /* the child is serving */
		fprintf(stderr, "cachefsd: %s\n", got > 0 ? msg : "start-up failed (see the log)");
		_exit(1);
	}
	close(p[0]);
	ready_fd = p[1];
	if (setsid() < 0)
		return -errno;
	return 0;
}

/* The child is serving: release the parent, drop the terminal. */
static void daemon_ready(void)
{
	int fd;

	if (ready_fd < 0)
		return;
	if (write(ready_fd, "", 1) != 1)
		log_warn("cannot tell the parent process: %s", strerror(errno));
	close(ready_fd);
	ready_fd = -1;
	if (chdir("/") != 0)
		log_warn("chdir /: %s", strerror(errno));
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
}

static void daemon_failed(const char *err)
{
	if (ready_fd >= 0) {
		if (write(ready_fd, err, strlen(err)) < 0)
			fprintf(stderr, "cachefsd: %s\n", err);
		close(ready_fd);
		ready_fd = -1;
		return;
	}
	fprintf(stderr, "cachefsd: %s\n", err);
}

/* The daemon runs in / (and reloads there): --config's file is named by
 * its absolute path in the arguments kept for reloads. */
/* A relative path made absolute against the start-up directory (the daemon
 * runs in /). */
static void make_absolute(char **path)
{
	char cwd[4096], *abs;

	if (*path == NULL || (*path)[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
		return;
	abs = malloc(strlen(cwd) + strlen(*path) + 2);
	if (abs == NULL)
		return;
	sprintf(abs, "%s/%s", cwd, *path);
	free(*path);
	*path = abs;
}

static int absolute_config_arg(struct daemon *d)
{
	char *abs, **copy;

	if (d->cfg.config_file == NULL || d->cfg.config_file[0] == '/')
		return 0;
	abs = realpath(d->cfg.config_file, NULL);
	if (abs == NULL)
		return -errno;
	copy = calloc((size_t)d->argc + 1, sizeof(char *));
	if (copy == NULL) {
		free(abs);
		return -ENOMEM;
	}
	for (int i = 0; i < d->argc; i++) {
		copy[i] = d->argv[i];
		if (strcmp(d->argv[i], "--config") == 0 && i + 1 < d->argc) {
			char *dup = strdup(abs);
			copy[i + 1] = dup ? dup : d->argv[i + 1];
			i++;
		} else if (strncmp(d->argv[i], "--config=", 9) == 0) {
			char *flag = malloc(strlen(abs) + 10);
			if (flag)
				sprintf(flag, "--config=%s", abs);
			copy[i] = flag ? flag : d->argv[i];
		}
	}
	free(d->cfg.config_file);
	d->cfg.config_file = abs;
	d->argv = copy;
	return 0;
}

static void free_argv_copy(struct daemon *d, char **orig)
{
	if (d->argv == orig)
		return;
	for (int i = 0; i < d->argc; i++)
		if (d->argv[i] != orig[i])
			free(d->argv[i]);
	free(d->argv);
}

int main(int argc, char **argv)
{
	struct daemon d;
	enum config_action action;
	char err[8192];
	struct sigaction sa;
	int rc, detach, exit_rc = 1;

	/* Replies and chunks are buffers of up to 1 MiB, allocated and freed
	 * for every READ: keep them on the heap and keep the freed top of the
	 * heap mapped, or each one costs 256 page faults of zeroed memory
	 * (measured: a third of the CPU time of a warm read). */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	memset(&d, 0, sizeof(d));
	d.argc = argc;
	d.argv = argv;
	config_defaults(&d.cfg);
	if (config_parse_args(&d.cfg, argc, argv, &action, err, sizeof(err)) != 0) {
		for (char *p = err; *p;) { /* every error of the files, one line each */
			size_t n = strcspn(p, "\n");
			fprintf(stderr, "cachefsd: %.*s\n", (int)n, p);
			p += n + (p[n] == '\n');
		}
		config_free(&d.cfg);
		return 2;
	}
	switch (action) {
	case CONFIG_HELP:
		config_usage(stdout);
		config_free(&d.cfg);
		return 0;
	case CONFIG_VERSION:
		printf("cachefsd %s\n", CACHEFSD_VERSION);
		config_free(&d.cfg);
		return 0;
	case CONFIG_CHECK:
		printf("configuration OK\n");
		config_print_sources(&d.cfg, stdout);
		config_free(&d.cfg);
		return 0;
	case CONFIG_RUN:
		break;
	}
	log_init(0, d.cfg.log_level);
	log_lines(CFS_LOG_INFO, "configuration: ", d.cfg.notes);
	/* A service manager waiting for READY=1 from the process it started
	 * (Type=notify): forking would make it wait for a process it does not
	 * know, so the daemon stays in the foreground. */
	detach = sdnotify_init() <= 0 && !d.cfg.foreground;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = prepare_cache_dir(d.cfg.cache_dir, err, sizeof(err));
	if (rc)
		goto fail;
	{
		/* the daemon runs in /: keep the cache dir absolute */
		char *abs = realpath(d.cfg.cache_dir, NULL);
		if (abs) {
			free(d.cfg.cache_dir);
			d.cfg.cache_dir = abs;
		}
	}
	make_absolute(&d.cfg.pid_file);
	make_absolute(&d.cfg.stats_file);
	rc = absolute_config_arg(&d);
	if (rc) {
		snprintf(err, sizeof(err), "--config %s: %s", d.cfg.config_file, strerror(-rc));
		goto fail;
	}
	if (detach) {
		rc = daemonize_early();
		if (rc) {
			snprintf(err, sizeof(err), "cannot daemonize: %s", strerror(-rc));
			goto fail;
		}
	}
	d.loop = loop_new();
	if (d.loop == NULL) {
		snprintf(err, sizeof(err), "cannot create the event loop: %s", strerror(errno));
		goto fail;
	}
	rc = origin_start(d.loop, &d.cfg, &d.up, err, sizeof(err));
	if (rc)
		goto fail;
	rc = engine_new(d.loop, &d.cfg, d.up, &d.engine, err, sizeof(err));
	if (rc == 0)
		rc = origin_use_store(d.up, engine_store(d.engine), err, sizeof(err));
	if (rc)
		goto fail;
	rc = peers_start(d.loop, &d.cfg, &d.peers, err, sizeof(err));
	if (rc)
		goto fail;
	engine_set_peers(d.engine, d.peers);
	rc = locks_new(d.loop, &d.cfg, d.engine, origin_info(d.up)->addr, &d.locks, err,
	               sizeof(err));
	if (rc == 0 && origin_nfs4_client(d.up) &&
	    (rc = locks_use_nfs4(d.locks, d.up)) != 0)
		snprintf(err, sizeof(err), "NLM: out of memory");
	if (rc)
		goto fail;
	engine_set_room(d.engine, NLM_PROGRAM, locks_submit, d.locks);
	engine_set_room(d.engine, NSM_PROGRAM, nsm_take, NULL);
	nsm_use_workers(engine_workers(d.engine));
	rc = proto_listen(d.loop, &d.cfg, engine_submit, d.engine, &d.srv, err, sizeof(err));
	if (rc)
		goto fail;
	/* after the listener: the client hosts it tells of the restart
	 * reclaim their locks through it at once */
	rc = nsm_start(d.loop, &d.cfg, err, sizeof(err));
	if (rc)
		goto fail;
	d.ops.loop = d.loop;
	d.ops.cfg = &d.cfg;
	d.ops.engine = d.engine;
	d.ops.up = d.up;
	d.ops.srv = d.srv;
	d.ops.version = CACHEFSD_VERSION;
	d.ops.started = time(NULL);
	d.ops.reload = reload_config;
	d.ops.reload_arg = &d;
	rc = control_start(&d.ops, &d.ctl, err, sizeof(err));
	if (rc == 0)
		rc = metrics_start(&d.ops, &d.metrics, err, sizeof(err));
	/* last: registered means served, and a failure below would leave
	 * registrations of a port nobody serves */
	if (rc == 0)
		rc = rpcbind_register(&d.cfg, proto_port(d.srv), &d.reg, err, sizeof(err));
	if (rc)
		goto fail;
	log_info("serving %s on %s (port %d), cache %s", engine_export_path(d.engine),
		 d.cfg.listen, proto_port(d.srv), d.cfg.cache_dir);

	if (d.cfg.pid_file)
		write_pid_file(d.cfg.pid_file);
	if (detach) {
		daemon_ready();
		log_init(1, d.cfg.log_level);
	}
	sdnotify_ready(&d.ops); /* READY=1, STATUS=, the watchdog's pings */
	loop_before_sleep(d.loop, before_sleep, &d);
	/* summaries of rate-limited log lines (log_limited) */
	loop_timer_add(d.loop, 1000, 1000, log_tick, NULL);
	loop_run(d.loop);

	sdnotify_stopping();
	log_info("shutting down");
	rpcbind_unregister(d.reg); /* first: clients stop finding a port that closes */
	metrics_stop(d.metrics);
	control_stop(d.ctl);
	nsm_stop();
	nsm_use_workers(NULL); /* the engine's, freed next */
	proto_shutdown(d.srv);
	locks_free(d.locks);
	engine_stop(d.engine);
	peers_stop(d.peers); /* fills waiting on a peer end (given up) */
	origin_stop(d.up);
	engine_free(d.engine);
	loop_free(d.loop);
	if (d.cfg.pid_file)
		unlink(d.cfg.pid_file);
	config_free(&d.cfg);
	free_argv_copy(&d, argv);
	return 0;

fail:
	if (loop_stop_signalled() && ready_fd < 0) {
		/* SIGINT/SIGTERM during the start ended a wait (loop.h): a
		 * stop, not a failure; exit 0 (a daemonizing parent still
		 * reports that it did not start) */
		sdnotify_stopping();
		log_info("stopped during start-up: %s", err);
		exit_rc = 0;
	} else {
		sdnotify_failed(err);
		daemon_failed(err);
	}
	metrics_stop(d.metrics);
	control_stop(d.ctl);
	nsm_stop();
	nsm_use_workers(NULL); /* the engine's, freed next */
	if (d.srv)
		proto_shutdown(d.srv);
	locks_free(d.locks);
	engine_stop(d.engine);
	peers_stop(d.peers);
	if (d.up)
		origin_stop(d.up);
	engine_free(d.engine);
	loop_free(d.loop);
	config_free(&d.cfg);
	free_argv_copy(&d, argv);
	return exit_rc;
}
