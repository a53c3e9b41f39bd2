/* benchstat: summarise the bench's raw CSV (one row per measured run).
 *
 *   benchstat --by COL[,COL...] --values COL[,COL...] [FILE]
 *
 * Groups rows by the --by columns (groups in order of first appearance) and
 * prints one CSV row per group:
 *   <by columns>,n,<v>_mean,<v>_sem,<v>_sd,<v>_min,<v>_max,...
 * n is the number of rows in the group; an empty value cell is skipped for
 * that value (e.g. cachefsd's CPU time in a "direct" row), and a value with
 * no cells at all prints empty fields. The CSV is the bench's own: no
 * quoting, no embedded commas. Reads stdin without FILE. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

#define MAXCOLS 128

struct series {
	double *v;
	size_t n, cap;
};

struct group {
	char *key;
	size_t rows;
	struct series *s; /* one per value column */
};

static int split(char *line, char **f, int max)
{
	int n = 0;
	line[strcspn(line, "\r\n")] = 0;
	for (char *p = line;; p++) {
		if (n == max)
			return -1;
		f[n++] = p;
		p = strchr(p, ',');
		if (!p)
			break;
		*p = 0;
	}
	return n;
}

static int col_index(char **hdr, int nh, const char *name)
{
	for (int i = 0; i < nh; i++)
		if (strcmp(hdr[i], name) == 0)
			return i;
	fprintf(stderr, "benchstat: no column %s\n", name);
	exit(2);
}

static int parse_cols(const char *list, char **hdr, int nh, int *idx, int max)
{
	char *copy = strdup(list), *save = NULL;
	int n = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == max)
			exit(2);
		idx[n++] = col_index(hdr, nh, t);
	}
	free(copy);
	return n;
}

static void push(struct series *s, double v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			abort();
	}
	s->v[s->n++] = v;
}

int main(int argc, char **argv)
{
	const char *by = NULL, *values = NULL, *file = NULL;
	FILE *in = stdin;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--by") == 0 && i + 1 < argc)
			by = argv[++i];
		else if (strcmp(argv[i], "--values") == 0 && i + 1 < argc)
			values = argv[++i];
		else if (argv[i][0] != '-' && !file)
			file = argv[i];
		else {
			fprintf(stderr, "usage: benchstat --by COLS --values COLS [FILE]\n");
			return 2;
		}
	}
	if (!by || !values) {
		fprintf(stderr, "usage: benchstat --by COLS --values COLS [FILE]\n");
		return 2;
	}
	if (file && !(in = fopen(file, "r"))) {
		fprintf(stderr, "benchstat: %s: %s\n", file, strerror(errno));
		return 1;
	}

	char *hline = NULL, *line = NULL;
	size_t hcap = 0, cap = 0;
	char *hdr[MAXCOLS], *f[MAXCOLS];
	int nh, byi[MAXCOLS], vi[MAXCOLS], nby, nv;
	if (getline(&hline, &hcap, in) < 0) {
		fprintf(stderr, "benchstat: empty input\n");
		return 1;
	}
	nh = split(hline, hdr, MAXCOLS);
	if (nh < 0)
		return 2;
	nby = parse_cols(by, hdr, nh, byi, MAXCOLS);
	nv = parse_cols(values, hdr, nh, vi, MAXCOLS);

	struct group *g = NULL;
	size_t ng = 0, gcap = 0;
	long lineno = 1;
	while (getline(&line, &cap, in) >= 0) {
		lineno++;
		if (line[0] == '\n' || line[0] == 0)
			continue;
		int nf = split(line, f, MAXCOLS);
		if (nf != nh) {
			fprintf(stderr, "benchstat: line %ld has %d fields, header %d\n", lineno,
			        nf, nh);
			return 1;
		}
		char key[4096] = "";
		size_t kl = 0;
		for (int i = 0; i < nby; i++) {
			int w =
			    snprintf(key + kl, sizeof(key) - kl, "%s%s", i ? "," : "", f[byi[i]]);
			if (w < 0 || (size_t)w >= sizeof(key) - kl)
				return 1;
			kl += (size_t)w;
		}
		size_t k;
		for (k = 0; k < ng; k++)
			if (strcmp(g[k].key, key) == 0)
				break;
		if (k == ng) {
			if (ng == gcap) {
				gcap = gcap ? gcap * 2 : 64;
				g = realloc(g, gcap * sizeof(*g));
				if (!g)
					abort();
			}
			g[ng].key = strdup(key);
			g[ng].rows = 0;
			g[ng].s = calloc((size_t)nv, sizeof(struct series));
			ng++;
		}
		g[k].rows++;
		for (int i = 0; i < nv; i++) {
			const char *cell = f[vi[i]];
			char *end;
			if (!cell[0])
				continue;
			double v = strtod(cell, &end);
			if (*end) {
				fprintf(stderr, "benchstat: line %ld: %s is not a number\n", lineno,
				        cell);
				return 1;
			}
			push(&g[k].s[i], v);
		}
	}

	printf("%s,n", by);
	for (int i = 0; i < nv; i++) {
		const char *c = hdr[vi[i]];
		printf(",%s_mean,%s_sem,%s_sd,%s_min,%s_max", c, c, c, c, c);
	}
	printf("\n");
	for (size_t k = 0; k < ng; k++) {
		printf("%s,%zu", g[k].key, g[k].rows);
		for (int i = 0; i < nv; i++) {
			struct bstat st;
			if (bstat_compute(g[k].s[i].v, g[k].s[i].n, &st) != 0) {
				printf(",,,,,");
				continue;
			}
			printf(",%.9g,%.9g,%.9g,%.9g,%.9g", st.mean, st.sem, st.sd, st.min, st.max);
		}
		printf("\n");
	}
	for (size_t k = 0; k < ng; k++) {
		for (int i = 0; i < nv; i++)
			free(g[k].s[i].v);
		free(g[k].s);
		free(g[k].key);
	}
	free(g);
	free(line);
	free(hline);
	if (file)
		fclose(in);
	return 0;
}
