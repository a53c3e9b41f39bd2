/* Configuration: one table of keys; every key is a config-file key
 * (key_name = value, or cachefilesd's "key value") and a flag
 * (--key-name VALUE). The file named by --config is read, then the *.conf
 * files of its include directory (<file>.d unless include_dir says) in name
 * order. Errors name the file, line and key: "FILE:LINE: KEY: why", all
 * of a load at once. */
#ifndef CFS_CONFIG_H
#define CFS_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CFS_MAX_ALLOW 32
/* At least the number of keys in config.c's table (checked there). */
#define CFS_CONFIG_KEYS 64

struct cfs_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	int prefix;
};

/* What lets a credential read cached bytes (docs/coherence.md). */
enum cfs_read_evidence {
	CFS_EVIDENCE_READ = 0, /* a READ the server answered for it */
	CFS_EVIDENCE_MODE,     /* that, or an ACCESS grant the mode bits agree with */
	CFS_EVIDENCE_ACCESS,   /* that, or any ACCESS grant */
};

/* The NFS version spoken to the filer (key upstream_version; origin.h). */
enum cfs_upstream_version {
	CFS_UPV_AUTO = 0, /* 3 when the server's MOUNT and NFSv3 answer, else 4 */
	CFS_UPV_3,
	CFS_UPV_4,
};

/* Registration with a local rpcbind (cachefsd/ops/rpcbind.c). */
enum cfs_register {
	CFS_REGISTER_AUTO = 0, /* when an rpcbind answers; skip what another server owns */
	CFS_REGISTER_YES,      /* required: refuse to start when it cannot be done */
	CFS_REGISTER_NO,       /* never: clients give port= and mountport= */
};

struct cfs_config {
	char *upstream;
	char *listen;
	char *cache_dir;
	int foreground;
	char *export_path; /* NULL: the upstream's export path */
	int upstream_connections;
	int upstream_timeout; /* seconds: start-up, and per call when soft */
	int reconnect_max;    /* seconds: cap of the upstream reconnect back-off */
	int soft;
	int upstream_version; /* enum cfs_upstream_version */
	int log_level;
	char *pid_file;
	char *stats_file; /* NULL: <cache_dir>/stats */
	int client_max_inflight;
	int client_idle_timeout;    /* seconds without a call before closing; 0: never */
	uint64_t client_memory_max; /* bytes all client connections may hold */
	char *allow;
	int secure_ports; /* clients must use a source port below 1024 */
	int root_squash;  /* uid 0 is forwarded as anon_uid/anon_gid */
	int anon_uid, anon_gid;
	struct cfs_cidr allow_list[CFS_MAX_ALLOW];
	int nallow;
	/* the data cache */
	uint64_t chunk_size;
	uint64_t inline_max;
	uint64_t cache_size; /* 0: only the free-space thresholds */
	int brun, bcull, bstop;
	int frun, fcull, fstop;
	uint64_t readahead; /* bytes ahead of a sequential reader; 0: off */
	int io_threads;
	int busy_poll;
	int lookup_prefetch;
	uint64_t memory_cache; /* recently verified chunks kept in memory */
	/* coherence */
	int meta_ttl;	   /* seconds; 0: strict mode */
	int meta_neg_ttl;  /* seconds a "no such name" answer is reused (ttl mode) */
	int write_quiesce; /* seconds without writes before a written file is cached again */
	int lock_poll;     /* seconds between re-sent blocked LOCKs (cachefsd/locks/); 0: off */
	int fresh_guard;   /* seconds: data of files changed this recently is not stored */
	int read_evidence; /* enum cfs_read_evidence */
	int evidence_ttl;  /* seconds evidence is used in strict mode */
	/* operator interfaces (docs/operations.md) */
	char *control_socket; /* NULL: <cache_dir>/control */
	char *metrics_listen; /* NULL or "off": no metrics listener */
	int rpcbind_register; /* enum cfs_register (key "register") */
	char *nsm_name;	      /* NULL: the host name (cachefsd/locks/nsm.c) */
	/* strict mode: ACCESS answered with the server's earlier answer after
	 * its GETATTR showed nothing changed (metaanswer.c strict_answer()) */
	int strict_access_reuse;
	int strict_access_ttl; /* seconds an ACCESS answer may be reused */
	char *config_file; /* flag only */
	int access_prefetch; /* ACCESS calls fetched ahead for listings, at most (0: off) */
	/* strict mode: µs after the server's LOOKUP answer within which the
	 * same connection's GETATTR of that file is answered with its
	 * attributes (metaanswer.c strict_answer(); 0: off) */
	int strict_lookup_attrs;
	int warm_ahead; /* a listing's entries whose cached records are read ahead (0: off) */
	/* the fleet (include/peers.h) */
	char *peers;          /* NULL: no peers */
	char *peer_self;      /* NULL: the entry equal to listen */
	int peer_timeout;     /* ms a fill waits for a peer */
	int peer_connections; /* per peer */
	int peer_keep;        /* keep chunks taken from their owner (else served only) */
	/* Where each key's value came from, by its place in config.c's table:
	 * NULL for the default, else "FILE:LINE" or "flag --key". Owned. */
	char *origin[CFS_CONFIG_KEYS];
	char *include_dir;  /* as given in the main file (NULL: <config_file>.d; "none": off) */
	char *files_read;   /* the files read, ", "-separated (NULL: none) */
	char *notes;        /* one line per value a later file overrode, "\n"-separated */
};

enum config_action {
	CONFIG_RUN = 0,
	CONFIG_HELP,
	CONFIG_VERSION,
	CONFIG_CHECK,
};

/* Fills defaults. Strings are owned by the config (config_free). */
void config_defaults(struct cfs_config *c);
void config_free(struct cfs_config *c);

/* Sets one key from text. Returns 0, or with a message (without
 * file/line) in err -ENOENT (no such key) or -EINVAL (a bad value); or
 * -ENOMEM. */
int config_set(struct cfs_config *c, const char *key, const char *value, char *err, size_t errlen);

/* Loads path, then the *.conf files of its include directory in name
 * order (include_dir in path; default path + ".d"; a missing directory is
 * none). Lines are "key = value" or "key value" (cachefilesd's form);
 * # and ; start comments; a value may be quoted ('...' or "..."); an
 * optional [cachefsd] section header. A key set twice in one file is an
 * error; a later file overrides an earlier one, and c->notes gets a line
 * naming both places. Every error of every file is reported, one line
 * each ("FILE:LINE: KEY: why", "\n"-separated; a line count ends err when
 * errlen cannot hold them all). Returns 0, or -errno: the main file's open
 * error, -EISDIR, -EINVAL for any error in any file. */
int config_load_file(struct cfs_config *c, const char *path, char *err, size_t errlen);

/* Parses argv: --config FILE is loaded first, then flags override it.
 * Checks required keys. Sets *action. Returns 0 or -EINVAL with err. */
int config_parse_args(struct cfs_config *c, int argc, char **argv, enum config_action *action,
		      char *err, size_t errlen);

/* Checks required keys and cross-key rules. Returns 0 or -EINVAL with
 * err (every rule broken, one line each). */
int config_validate(const struct cfs_config *c, char *err, size_t errlen);

void config_usage(FILE *out);
/* Prints the effective configuration in config-file syntax. */
void config_print(const struct cfs_config *c, FILE *out);
/* The same, each line ending in a comment saying where the value came
 * from ("# FILE:LINE", "# flag --key", "# default"); values quoted where
 * the file syntax needs it, so that the output reads back as a file. */
void config_print_sources(const struct cfs_config *c, FILE *out);

/* SIGHUP: copies the keys that may change while running from next into
 * cur (next is a freshly parsed, validated configuration). changed gets
 * "key old -> new, ..." for the keys applied, restart the names of keys
 * that differ but need a restart (either may be empty). Returns the number
 * of keys applied. */
int config_apply_live(struct cfs_config *cur, const struct cfs_config *next, char *changed,
		      size_t clen, char *restart, size_t rlen);
/* 1 when key may change while running. */
int config_key_live(const char *key);

/* "64K" "1M" "2G" "1.5T" "800 GiB" "123" -> bytes (binary units; a
 * fraction needs a unit and is rounded to a byte); returns 0 or -EINVAL. */
int config_parse_size(const char *s, uint64_t *out);
/* "ADDR/PREFIX" or "ADDR"; returns 0 or -EINVAL. */
int config_parse_cidr(const char *s, struct cfs_cidr *out);
/* Returns 1 when sa (struct sockaddr *) matches one of the allow entries. */
int config_allowed(const struct cfs_config *c, const void *sa);

#endif
