/* promcheck: a strict checker of the Prometheus text exposition format
 * (version 0.0.4), for the metrics tests.
 *
 *   promcheck FILE              checks FILE; prints "ok: N families, M samples"
 *   promcheck --monotonic OLD NEW
 *                               checks both, then that every counter and
 *                               histogram series of OLD is in NEW and did
 *                               not go down
 *   promcheck --value SERIES FILE
 *                               prints the value of one series, written as
 *                               in the file, e.g. 'x_total{proc="READ"}'
 *                               (labels in any order)
 *
 * Checked: every line is a "# HELP", "# TYPE" or other comment, or a
 * sample "name{label="value",...} value [timestamp]" with valid names,
 * escapes (\\ \" \n only) and a float value; HELP and TYPE at most once per
 * family and before its samples; a family's samples together; every
 * sample belongs to a family with a TYPE; counters end in _total and are
 * not negative; histograms have only _bucket (with le), _sum and _count,
 * buckets in increasing le with non-decreasing counts, le="+Inf" equal to
 * _count; no series twice; the text ends with a newline.
 * Exit: 0 ok, 1 a violation (printed with its line number), 2 usage. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LABELS 16

struct series {
	char *key; /* name{sorted labels} */
	char *family;
	int type; /* of its family */
	double value;
};

enum { T_NONE, T_COUNTER, T_GAUGE, T_HISTOGRAM, T_SUMMARY, T_UNTYPED };

struct fam {
	char *name;
	int type;
	int help, typed, closed, sampled;
};

struct doc {
	const char *file;
	struct series *s;
	size_t ns, caps;
	struct fam *f;
	size_t nf, capf;
	int cur; /* family of the last sample, -1 */
	/* histogram check state: one label set at a time */
	char hkey[1024];
	double last_le, last_count;
	int have_inf;
	double inf_count;
};

static int lineno;
static const char *curfile;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "promcheck: %s:%d: ", curfile, lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static int name_ok(const char *s, size_t n, int metric)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (!(isalpha(c) || c == '_' || (metric && c == ':') || (i > 0 && isdigit(c))))
			return 0;
	}
	return 1;
}

static int parse_float(const char *s, double *out)
{
	char *end;

	if (strcmp(s, "+Inf") == 0) {
		*out = INFINITY;
		return 0;
	}
	if (strcmp(s, "-Inf") == 0) {
		*out = -INFINITY;
		return 0;
	}
	if (strcmp(s, "NaN") == 0) {
		*out = NAN;
		return 0;
	}
	if (*s == 0 || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	*out = strtod(s, &end);
	if (*end || errno || isnan(*out) || isinf(*out))
		return -1;
	return 0;
}

static struct fam *fam_find(struct doc *d, const char *name)
{
	for (size_t i = 0; i < d->nf; i++)
		if (strcmp(d->f[i].name, name) == 0)
			return &d->f[i];
	return NULL;
}

static struct fam *fam_get(struct doc *d, const char *name)
{
	struct fam *f = fam_find(d, name);

	if (f)
		return f;
	if (d->nf == d->capf) {
		d->capf = d->capf ? 2 * d->capf : 64;
		d->f = realloc(d->f, d->capf * sizeof(*d->f));
	}
	f = &d->f[d->nf++];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	return f;
}

static int type_of(const char *t)
{
	static const char *const names[] = {"", "counter", "gauge", "histogram", "summary",
					    "untyped"};
	for (int i = 1; i <= T_UNTYPED; i++)
		if (strcmp(t, names[i]) == 0)
			return i;
	return T_NONE;
}

static void comment(struct doc *d, char *line)
{
	char *kw, *name, *rest;
	struct fam *f;

	if (strncmp(line, "# HELP ", 7) != 0 && strncmp(line, "# TYPE ", 7) != 0)
		return; /* a plain comment */
	kw = line + 2;
	kw[4] = 0;
	name = kw + 5;
	rest = strchr(name, ' ');
	if (rest == NULL)
		fail("%s line without text", kw);
	*rest++ = 0;
	if (!name_ok(name, strlen(name), 1))
		fail("bad metric name '%s'", name);
	f = fam_get(d, name);
	if (f->closed || f->sampled)
		fail("%s of %s after its samples", kw, name);
	if (strcmp(kw, "HELP") == 0) {
		if (f->help)
			fail("second HELP for %s", name);
		f->help = 1;
		for (char *p = rest; *p; p++)
			if (*p == '\\' && p[1] != '\\' && p[1] != 'n')
				fail("bad escape in HELP of %s", name);
	} else {
		if (f->typed)
			fail("second TYPE for %s", name);
		f->type = type_of(rest);
		if (f->type == T_NONE)
			fail("unknown type '%s' for %s", rest, name);
		f->typed = 1;
		if (f->type == T_COUNTER && (strlen(name) < 6 || strcmp(name + strlen(name) - 6, "_total") != 0))
			fail("counter %s does not end in _total", name);
	}
	if (d->cur >= 0 && &d->f[d->cur] != f)
		d->f[d->cur].closed = 1;
	d->cur = (int)(f - d->f);
}

struct label {
	char name[128];
	char value[1024];
};

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->name, ((const struct label *)b)->name);
}

/* Parses name{labels} into name, labels; returns a pointer after it. */
static char *parse_series(char *p, char *name, size_t nlen, struct label *l, int *nl)
{
	size_t n = 0;

	while (p[n] && p[n] != '{' && p[n] != ' ')
		n++;
	if (n >= nlen || !name_ok(p, n, 1))
		fail("bad metric name '%.*s'", (int)n, p);
	memcpy(name, p, n);
	name[n] = 0;
	p += n;
	*nl = 0;
	if (*p != '{')
		return p;
	p++;
	while (*p != '}') {
		struct label *x;
		size_t k = 0, v = 0;

		if (*nl == MAX_LABELS)
			fail("too many labels");
		x = &l[(*nl)++];
		while (p[k] && p[k] != '=')
			k++;
		if (k >= sizeof(x->name) || !name_ok(p, k, 0) || strncmp(p, "__", 2) == 0)
			fail("bad label name '%.*s'", (int)k, p);
		memcpy(x->name, p, k);
		x->name[k] = 0;
		p += k;
		if (p[0] != '=' || p[1] != '"')
			fail("label %s: expected =\"", x->name);
		p += 2;
		while (*p != '"') {
			if (*p == 0)
				fail("unterminated label value");
			if (*p == '\\') {
				if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
					fail("bad escape \\%c in label %s", p[1], x->name);
				p++;
			}
			if (v + 1 >= sizeof(x->value))
				fail("label value too long");
			x->value[v++] = *p++;
		}
		x->value[v] = 0;
		p++;
		for (int i = 0; i < *nl - 1; i++)
			if (strcmp(l[i].name, x->name) == 0)
				fail("label %s twice", x->name);
		if (*p == ',')
			p++;
		else if (*p != '}')
			fail("expected , or } after label %s", x->name);
	}
	return p + 1;
}

static void series_key(char *out, size_t len, const char *name, struct label *l, int nl,
		       const char *skip)
{
	size_t o = (size_t)snprintf(out, len, "%s{", name);

	qsort(l, (size_t)nl, sizeof(*l), cmp_label);
	for (int i = 0; i < nl && o < len; i++) {
		if (skip && strcmp(l[i].name, skip) == 0)
			continue;
		o += (size_t)snprintf(out + o, len - o, "%s=\"%s\",", l[i].name, l[i].value);
	}
	if (o < len)
		snprintf(out + o, len - o, "}");
}

static void histogram_sample(struct doc *d, const char *fam, const char *suffix,
			     struct label *l, int nl, double v)
{
	char key[1024], lebuf[1024];
	const char *le = NULL;

	for (int i = 0; i < nl; i++)
		if (strcmp(l[i].name, "le") == 0)
			le = strcpy(lebuf, l[i].value); /* series_key() sorts l */
	series_key(key, sizeof(key), fam, l, nl, "le");
	if (strcmp(suffix, "_bucket") == 0) {
		double b;
		if (le == NULL || parse_float(le, &b) != 0)
			fail("histogram %s: bucket without a valid le", fam);
		if (strcmp(key, d->hkey) != 0) {
			if (d->hkey[0] && !d->have_inf)
				fail("histogram %s: no le=\"+Inf\" bucket", d->hkey);
			snprintf(d->hkey, sizeof(d->hkey), "%s", key);
			d->last_le = -INFINITY;
			d->last_count = 0;
			d->have_inf = 0;
		}
		if (!(b > d->last_le))
			fail("histogram %s: le %s not increasing", fam, le);
		if (v < d->last_count)
			fail("histogram %s: bucket le=%s count %g below the previous %g", fam, le, v,
			     d->last_count);
		d->last_le = b;
		d->last_count = v;
		if (isinf(b)) {
			d->have_inf = 1;
			d->inf_count = v;
		}
		return;
	}
	if (le)
		fail("histogram %s%s has an le label", fam, suffix);
	if (strcmp(key, d->hkey) != 0 || !d->have_inf)
		fail("histogram %s%s before its buckets (with le=\"+Inf\")", fam, suffix);
	if (strcmp(suffix, "_count") == 0 && v != d->inf_count)
		fail("histogram %s: _count %g differs from the +Inf bucket %g", fam, v, d->inf_count);
}

static void sample(struct doc *d, char *line)
{
	char name[256], key[1200], *p, *val, *ts;
	struct label l[MAX_LABELS];
	struct fam *f = NULL;
	const char *suffix = "";
	int nl;
	double v;

	p = parse_series(line, name, sizeof(name), l, &nl);
	if (*p != ' ')
		fail("expected a space before the value");
	while (*p == ' ')
		p++;
	val = p;
	ts = strchr(val, ' ');
	if (ts) {
		*ts++ = 0;
		char *end;
		strtoll(ts, &end, 10);
		if (*ts == 0 || *end)
			fail("bad timestamp '%s'", ts);
	}
	if (parse_float(val, &v) != 0)
		fail("bad value '%s'", val);
	f = fam_find(d, name);
	if (f == NULL || f->type == T_HISTOGRAM || f->type == T_SUMMARY) {
		static const char *const sfx[] = {"_bucket", "_sum", "_count"};
		for (int i = 0; i < 3 && (f == NULL || f->type == T_HISTOGRAM || f->type == T_SUMMARY); i++) {
			size_t n = strlen(name), k = strlen(sfx[i]);
			if (n > k && strcmp(name + n - k, sfx[i]) == 0) {
				char base[256];
				snprintf(base, sizeof(base), "%.*s", (int)(n - k), name);
				struct fam *b = fam_find(d, base);
				if (b && (b->type == T_HISTOGRAM || b->type == T_SUMMARY)) {
					f = b;
					suffix = sfx[i];
				}
			}
		}
	}
	if (f == NULL || !f->typed)
		fail("sample %s has no TYPE", name);
	if ((f->type == T_HISTOGRAM) && suffix[0] == 0)
		fail("histogram %s: sample without _bucket/_sum/_count", name);
	if (f->closed || (d->cur >= 0 && &d->f[d->cur] != f))
		fail("samples of %s are not together (after its HELP/TYPE)", f->name);
	d->cur = (int)(f - d->f);
	f->sampled = 1;
	if (f->type == T_COUNTER && !(v >= 0))
		fail("counter %s is %s", name, val);
	if (f->type == T_HISTOGRAM)
		histogram_sample(d, f->name, suffix, l, nl, v);
	series_key(key, sizeof(key), name, l, nl, NULL);
	for (size_t i = 0; i < d->ns; i++)
		if (strcmp(d->s[i].key, key) == 0)
			fail("series %s twice", key);
	if (d->ns == d->caps) {
		d->caps = d->caps ? 2 * d->caps : 256;
		d->s = realloc(d->s, d->caps * sizeof(*d->s));
	}
	d->s[d->ns].key = strdup(key);
	d->s[d->ns].family = f->name;
	d->s[d->ns].type = f->type;
	d->s[d->ns].value = v;
	d->ns++;
}

static void load(struct doc *d, const char *file)
{
	FILE *fp = fopen(file, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int last_nl = 1;

	memset(d, 0, sizeof(*d));
	d->file = file;
	d->cur = -1;
	curfile = file;
	lineno = 0;
	if (fp == NULL) {
		fprintf(stderr, "promcheck: %s: %s\n", file, strerror(errno));
		exit(2);
	}
	while ((n = getline(&line, &cap, fp)) > 0) {
		lineno++;
		last_nl = line[n - 1] == '\n';
		if (last_nl)
			line[--n] = 0;
		if (memchr(line, 0, (size_t)n))
			fail("NUL byte");
		if (n == 0)
			continue; /* empty lines are allowed */
		if (line[0] == '#')
			comment(d, line);
		else
			sample(d, line);
	}
	free(line);
	fclose(fp);
	if (!last_nl)
		fail("the last line does not end with a newline");
	if (d->hkey[0] && !d->have_inf)
		fail("histogram %s: no le=\"+Inf\" bucket", d->hkey);
	for (size_t i = 0; i < d->nf; i++) {
		int has = 0;
		for (size_t j = 0; j < d->ns && !has; j++)
			has = d->s[j].family == d->f[i].name;
		if (!d->f[i].typed)
			fail("family %s has HELP but no TYPE", d->f[i].name);
		if (!has)
			fail("family %s has no samples", d->f[i].name);
	}
}

static void doc_free(struct doc *d)
{
	for (size_t i = 0; i < d->ns; i++)
		free(d->s[i].key);
	for (size_t i = 0; i < d->nf; i++)
		free(d->f[i].name);
	free(d->s);
	free(d->f);
}

static const struct series *find(const struct doc *d, const char *key)
{
	for (size_t i = 0; i < d->ns; i++)
		if (strcmp(d->s[i].key, key) == 0)
			return &d->s[i];
	return NULL;
}

int main(int argc, char **argv)
{
	struct doc a, b;

	if (argc == 2 && argv[1][0] != '-') {
		load(&a, argv[1]);
		printf("ok: %zu families, %zu samples\n", a.nf, a.ns);
		doc_free(&a);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "--monotonic") == 0) {
		size_t n = 0;
		load(&a, argv[2]);
		load(&b, argv[3]);
		curfile = argv[3];
		lineno = 0;
		for (size_t i = 0; i < a.ns; i++) {
			const struct series *s = &a.s[i], *t;
			if (s->type != T_COUNTER && s->type != T_HISTOGRAM)
				continue;
			t = find(&b, s->key);
			if (t == NULL)
				fail("series %s disappeared", s->key);
			if (t->value < s->value)
				fail("counter %s went down: %g -> %g", s->key, s->value, t->value);
			n++;
		}
		printf("ok: %zu counter series did not go down\n", n);
		doc_free(&a);
		doc_free(&b);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "--value") == 0) {
		char key[1200], name[256], *copy = strdup(argv[2]);
		struct label l[MAX_LABELS];
		const struct series *s;
		int nl;

		curfile = "(argument)";
		parse_series(copy, name, sizeof(name), l, &nl);
		series_key(key, sizeof(key), name, l, nl, NULL);
		load(&a, argv[3]);
		s = find(&a, key);
		free(copy);
		if (s == NULL) {
			fprintf(stderr, "promcheck: %s: no series %s\n", argv[3], argv[2]);
			doc_free(&a);
			return 1;
		}
		printf("%.17g\n", s->value);
		doc_free(&a);
		return 0;
	}
	fprintf(stderr, "usage: promcheck FILE | --monotonic OLD NEW | --value SERIES FILE\n");
	return 2;
}
