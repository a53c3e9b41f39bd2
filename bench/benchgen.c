/* benchgen: write the bench's deterministic data set into a directory.
 *
 *   benchgen --out DIR [--seed S] [--big NAME=SIZE]...
 *            [--tree NAME:files=N,dirs=N,bytes=SIZE[,max=SIZE]] [--plan-only]
 *
 * --big NAME=SIZE   one file of SIZE incompressible bytes (stream id: the
 *                   argument's position, so names may change freely)
 * --tree ...        a many-small-files tree under DIR/NAME (dataset.h); up
 *                   to 4 (the first uses the seed itself, the others
 *                   streams derived from it)
 * SIZE takes K, M, G suffixes (powers of 1024) or plain bytes.
 *
 * DIR/MANIFEST lists every regular file as "size xxh64 relpath" (the format
 * nfsbench --verify writes) and DIR/SUMMARY the totals as key=value lines:
 *   files=N dirs=N bytes=N tree_files=N tree_dirs=N tree_bytes=N
 * --plan-only prints the manifest to stdout and writes nothing. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dataset.h"

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s)
		return -1;
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: benchgen --out DIR [--seed S] [--big NAME=SIZE]...\n"
	                "                [--tree NAME:files=N,dirs=N,bytes=SIZE[,max=SIZE]] "
	                "[--plan-only]\n");
	exit(2);
}

static int parse_tree(const char *arg, char *name, size_t namesz, struct ds_tree_spec *t)
{
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg || (size_t)(colon - arg) >= namesz)
		return -1;
	memcpy(name, arg, (size_t)(colon - arg));
	name[colon - arg] = 0;
	t->max_file = 1 << 20;
	char *copy = strdup(colon + 1), *save = NULL;
	int rc = 0;
	for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		uint64_t v;
		if (!eq || parse_size(eq + 1, &v) != 0) {
			rc = -1;
			break;
		}
		*eq = 0;
		if (strcmp(kv, "files") == 0)
			t->files = (uint32_t)v;
		else if (strcmp(kv, "dirs") == 0)
			t->dirs = (uint32_t)v;
		else if (strcmp(kv, "bytes") == 0)
			t->bytes = v;
		else if (strcmp(kv, "max") == 0)
			t->max_file = v;
		else
			rc = -1;
	}
	free(copy);
	if (t->dirs == 0 || t->max_file == 0)
		rc = -1;
	return rc;
}

static void mkdir_or_die(const char *p)
{
	if (mkdir(p, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "benchgen: mkdir %s: %s\n", p, strerror(errno));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	uint64_t seed = 1;
	int plan_only = 0;
	struct {
		char name[64];
		uint64_t size;
	} bigs[16];
	int nbig = 0;
	char tree_name[4][64];
	struct ds_tree_spec tree[4];
	int ntree = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--plan-only") == 0) {
			plan_only = 1;
			continue;
		}
		const char *v = i + 1 < argc ? argv[++i] : NULL;
		if (!v)
			usage();
		if (strcmp(a, "--out") == 0)
			out = v;
		else if (strcmp(a, "--seed") == 0)
			seed = strtoull(v, NULL, 0);
		else if (strcmp(a, "--big") == 0) {
			const char *eq = strchr(v, '=');
			if (nbig == 16 || !eq || eq == v ||
			    (size_t)(eq - v) >= sizeof(bigs[0].name) ||
			    parse_size(eq + 1, &bigs[nbig].size) != 0)
				usage();
			memcpy(bigs[nbig].name, v, (size_t)(eq - v));
			bigs[nbig].name[eq - v] = 0;
			nbig++;
		} else if (strcmp(a, "--tree") == 0) {
			if (ntree == 4)
				usage();
			memset(&tree[ntree], 0, sizeof(tree[ntree]));
			if (parse_tree(v, tree_name[ntree], sizeof(tree_name[ntree]),
			               &tree[ntree]) != 0)
				usage();
			ntree++;
		} else
			usage();
	}
	if (!out && !plan_only)
		usage();

	FILE *man = stdout;
	char path[4096];
	if (!plan_only) {
		mkdir_or_die(out);
		snprintf(path, sizeof(path), "%s/MANIFEST", out);
		man = fopen(path, "w");
		if (!man) {
			fprintf(stderr, "benchgen: %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	uint64_t files = 0, dirs = 0, bytes = 0, tfiles = 0, tdirs = 0, tbytes = 0;
	for (int i = 0; i < nbig; i++) {
		uint64_t s = ds_stream_seed(seed, (uint64_t)i), h;
		if (plan_only) {
			h = ds_stream_xxh(bigs[i].size, s);
		} else {
			snprintf(path, sizeof(path), "%s/%s", out, bigs[i].name);
			int rc = ds_write_file(path, bigs[i].size, s, &h);
			if (rc) {
				fprintf(stderr, "benchgen: %s: %s\n", path, strerror(-rc));
				return 1;
			}
		}
		fprintf(man, "%" PRIu64 " %016llx %s\n", bigs[i].size, (unsigned long long)h,
		        bigs[i].name);
		files++;
		bytes += bigs[i].size;
	}
	for (int t = 0; t < ntree; t++) {
		struct ds_entry *e;
		size_t n;
		int rc = ds_tree_plan(
		    &tree[t], t == 0 ? seed : ds_stream_seed(seed, 0x7000 + (uint64_t)t), &e, &n);
		if (rc) {
			fprintf(stderr, "benchgen: planning the tree: %s\n", strerror(-rc));
			return 1;
		}
		for (size_t i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/%s%s%s", out ? out : ".", tree_name[t],
			         e[i].path[0] ? "/" : "", e[i].path);
			if (e[i].is_dir) {
				if (!plan_only)
					mkdir_or_die(path);
				tdirs++;
				continue;
			}
			uint64_t h;
			if (plan_only) {
				h = ds_stream_xxh(e[i].size, e[i].seed);
			} else if ((rc = ds_write_file(path, e[i].size, e[i].seed, &h)) != 0) {
				fprintf(stderr, "benchgen: %s: %s\n", path, strerror(-rc));
				return 1;
			}
			fprintf(man, "%" PRIu64 " %016llx %s/%s\n", e[i].size,
			        (unsigned long long)h, tree_name[t], e[i].path);
			tfiles++;
			tbytes += e[i].size;
		}
		free(e);
	}
	files += tfiles;
	dirs += tdirs;
	bytes += tbytes;
	if (!plan_only) {
		if (fclose(man) != 0) {
			fprintf(stderr, "benchgen: writing MANIFEST failed\n");
			return 1;
		}
		snprintf(path, sizeof(path), "%s/SUMMARY", out);
		FILE *s = fopen(path, "w");
		if (!s) {
			fprintf(stderr, "benchgen: %s: %s\n", path, strerror(errno));
			return 1;
		}
		fprintf(s,
		        "files=%" PRIu64 " dirs=%" PRIu64 " bytes=%" PRIu64 " tree_files=%" PRIu64
		        " tree_dirs=%" PRIu64 " tree_bytes=%" PRIu64 "\n",
		        files, dirs, bytes, tfiles, tdirs, tbytes);
		if (fclose(s) != 0)
			return 1;
	}
	return 0;
}
