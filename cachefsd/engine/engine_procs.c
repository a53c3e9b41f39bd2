/* The engine's rows of the procedure table (engine_procs.h says why they
 * are not in proto/procs.c): what each NFSv3 reply says about which
 * handle, what the metadata cache keeps of it and what the call makes
 * stale, and how the engine takes the call. */
#include "engine_int.h"
#include "engine_procs.h"

#include <stddef.h>

/* Attribute entries: OK / FAIL arm, the handle in the arguments (A, af) or
 * the result (R, rf), the attributes in the result (R, at). */
#define ARG(A, af) .fh_in = FH_ARGS, .fh_off = offsetof(A, af)
#define FATTR_OK(A, af, R, at)                                                                     \
	{                                                                                          \
		.what = OBS_FATTR, .arm = ARM_OK, ARG(A, af),                                      \
		.at_off = offsetof(R, R##_u.resok.at)                                              \
	}
/* a post_op_attr / wcc_data named the same in both arms */
#define POST2(kind, A, af, R, at)                                                                  \
	{.what = kind, .arm = ARM_OK, ARG(A, af), .at_off = offsetof(R, R##_u.resok.at)},          \
	{                                                                                          \
		.what = kind, .arm = ARM_FAIL, ARG(A, af), .at_off = offsetof(R, R##_u.resfail.at) \
	}
#define POST(A, af, R, at) POST2(OBS_POST, A, af, R, at)
#define WCC(A, af, R, at)  POST2(OBS_WCC, A, af, R, at)
/* ... of an object the call changes when it succeeds */
#define CHANGED(A, af, R, at)                                                                      \
	{.what = OBS_WCC,                                                                          \
	 .arm = ARM_OK,                                                                            \
	 ARG(A, af),                                                                               \
	 .at_off = offsetof(R, R##_u.resok.at),                                                    \
	 .changes = 1},                                                                            \
	{                                                                                          \
		.what = OBS_WCC, .arm = ARM_FAIL, ARG(A, af),                                      \
		.at_off = offsetof(R, R##_u.resfail.at)                                            \
	}
/* the same, of one arm */
#define POST1(arm_, A, af, R, arm_name, at)                                                        \
	{                                                                                          \
		.what = OBS_POST, .arm = arm_, ARG(A, af),                                         \
		.at_off = offsetof(R, R##_u.arm_name.at)                                           \
	}
/* a new object's handle and attributes, in a successful reply */
#define NEWOBJ(R)                                                                                  \
	{                                                                                          \
		.what = OBS_POST, .arm = ARM_OK, .fh_in = FH_RES_OPT,                              \
		.fh_off = offsetof(R, R##_u.resok.obj),                                            \
		.at_off = offsetof(R, R##_u.resok.obj_attributes)                                  \
	}
/* the ACCESS3 bits the answer proves, under the post_op_attr at (both arms) */
#define EVIDENCE(A, af, R, at, b, noent)                                                           \
	{.what = OBS_EVIDENCE,                                                                     \
	 .arm = ARM_OK,                                                                            \
	 ARG(A, af),                                                                               \
	 .at_off = offsetof(R, R##_u.resok.at),                                                    \
	 .bits = b,                                                                                \
	 .noent_allowed = noent},                                                                  \
	{                                                                                          \
		.what = OBS_EVIDENCE, .arm = ARM_FAIL, ARG(A, af),                                 \
		.at_off = offsetof(R, R##_u.resfail.at), .bits = b, .noent_allowed = noent         \
	}
#define MORE(arm_)                                                                                 \
	{                                                                                          \
		.what = OBS_MORE, .arm = arm_                                                      \
	}

/* Metadata records: a whole reply kept as type t under the row's handle. */
#define BLOB(t) .blob = t
/* a directory page: kept by listing pass (meta.c), by cookie and counts */
#define PAGE(t, A, R, end, ...)                                                                    \
	.blob = t, .page_cookie = offsetof(A, cookie), .page_verf = offsetof(A, cookieverf),       \
	.page_ncounts = sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t),                          \
	.page_count = {__VA_ARGS__}, .page_res_verf = offsetof(R, R##_u.resok.cookieverf),         \
	.page_end = end
#define NAMED_NEW(A, af, R)                                                                        \
	.name = NAME_NEW, .name_args = offsetof(A, af), .name_res = offsetof(R, R##_u.resok.obj)

/* Answered from a kept reply: its attributes at the resok arm's at, for a
 * caller with evidence of the ACCESS3 bits want (0: anyone). */
#define ANSWERS(R, at, want)                                                                       \
	.dispatch = ED_META, .answer = ANS_BLOB, .answer_at = offsetof(R, R##_u.resok.at),         \
	.answer_want = want

/* Invalidations. */
#define INV(w, A, af)                                                                              \
	{                                                                                          \
		.what = w, .off = offsetof(A, af)                                                  \
	}

/* The file whose data the call changes. */
#define CHANGES(A, af) .changes_data = 1, .changes_fh = offsetof(A, af)

/* Counts held to CFS_MAX_IO. */
#define CLAMP(...)                                                                                 \
	.nclamp = sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t), .clamp = {__VA_ARGS__}

/* A call that makes a name in its directory (CREATE, MKDIR, SYMLINK, MKNOD):
 * the new object, the directory's wcc, the name recorded, and the name and
 * listing made stale. */
#define MAKES_NAME(A, R)                                                                           \
	.obs = {NEWOBJ(R), CHANGED(A, where.dir, R, dir_wcc)}, NAMED_NEW(A, where, R),             \
	.inv = {INV(INV_NAME, A, where), INV(INV_DIR, A, where)}

const struct engine_proc engine_procs[NFS3_NPROCS] = {
    [NFS3_NULL] = {.dispatch = ED_PROXY},
    /* the server's GETATTR is a client's revalidation (the strict-mode
     * ACCESS reuse, metaanswer.c strict_answer()) */
    [NFS3_GETATTR] = {.obs = {{.what = OBS_FATTR,
                               .arm = ARM_OK,
                               ARG(GETATTR3args, object),
                               .at_off = offsetof(GETATTR3res, GETATTR3res_u.resok.obj_attributes),
                               .reval = 1}},
                      .dispatch = ED_META,
                      .answer = ANS_GETATTR},
    [NFS3_SETATTR] = {.obs = {CHANGED(SETATTR3args, object, SETATTR3res, obj_wcc)},
                      .inv = {INV(INV_ATTRS, SETATTR3args, object)},
                      CHANGES(SETATTR3args, object)},
    /* found or not, the caller was allowed to search the directory (the
     * evidence first, as it always was); the object's attributes, then
     * the directory's; engine_lookup_prefetch() after them */
    [NFS3_LOOKUP] =
        {.obs = {EVIDENCE(LOOKUP3args, what.dir, LOOKUP3res, dir_attributes, ACCESS3_LOOKUP, 1),
                 {.what = OBS_POST,
                  .arm = ARM_OK,
                  .fh_in = FH_RES,
                  .fh_off = offsetof(LOOKUP3res, LOOKUP3res_u.resok.object),
                  .at_off = offsetof(LOOKUP3res, LOOKUP3res_u.resok.obj_attributes),
                  .reval = 1},
                 POST1(ARM_OK, LOOKUP3args, what.dir, LOOKUP3res, resok, dir_attributes),
                 POST1(ARM_FAIL, LOOKUP3args, what.dir, LOOKUP3res, resfail, dir_attributes)},
         .name = NAME_LOOKUP,
         .name_args = offsetof(LOOKUP3args, what),
         .name_res = offsetof(LOOKUP3res, LOOKUP3res_u.resok.object),
         .dispatch = ED_META,
         .answer = ANS_LOOKUP},
    /* what the caller may do, per credential: engine_observe_access() */
    [NFS3_ACCESS] = {.obs = {POST(ACCESS3args, object, ACCESS3res, obj_attributes), MORE(ARM_OK)},
                     .observe_more = engine_observe_access,
                     .dispatch = ED_META,
                     .answer = ANS_ACCESS},
    [NFS3_READLINK] = {.obs = {POST(READLINK3args, symlink, READLINK3res, symlink_attributes),
                               EVIDENCE(READLINK3args, symlink, READLINK3res, symlink_attributes,
                                        ACCESS3_READ, 0)},
                       BLOB('r'),
                       ANSWERS(READLINK3res, symlink_attributes, ACCESS3_READ)},
    /* the upstream just let this caller read (or refused it) */
    [NFS3_READ] = {.obs = {POST(READ3args, file, READ3res, file_attributes),
                           EVIDENCE(READ3args, file, READ3res, file_attributes, ACCESS3_READ, 0)},
                   .dispatch = ED_READ,
                   CLAMP(offsetof(READ3args, count))},
    [NFS3_WRITE] = {.obs = {CHANGED(WRITE3args, file, WRITE3res, file_wcc)},
                    .inv = {INV(INV_ATTRS, WRITE3args, file)},
                    CHANGES(WRITE3args, file),
                    .prepare = engine_write_prepare},
    [NFS3_CREATE] = {MAKES_NAME(CREATE3args, CREATE3res)},
    [NFS3_MKDIR] = {MAKES_NAME(MKDIR3args, MKDIR3res)},
    [NFS3_SYMLINK] = {MAKES_NAME(SYMLINK3args, SYMLINK3res)},
    [NFS3_MKNOD] = {MAKES_NAME(MKNOD3args, MKNOD3res)},
    [NFS3_REMOVE] = {.obs = {CHANGED(REMOVE3args, object.dir, REMOVE3res, dir_wcc)},
                     .inv = {INV(INV_NAME, REMOVE3args, object), INV(INV_DIR, REMOVE3args, object)},
                     .nnamed = 1,
                     .named = {offsetof(REMOVE3args, object)}},
    [NFS3_RMDIR] = {.obs = {CHANGED(RMDIR3args, object.dir, RMDIR3res, dir_wcc)},
                    .inv = {INV(INV_NAME, RMDIR3args, object), INV(INV_DIR, RMDIR3args, object)},
                    .nnamed = 1,
                    .named = {offsetof(RMDIR3args, object)},
                    .purge_named = 1},
    [NFS3_RENAME] = {.obs = {CHANGED(RENAME3args, from.dir, RENAME3res, fromdir_wcc),
                             CHANGED(RENAME3args, to.dir, RENAME3res, todir_wcc)},
                     .inv = {INV(INV_NAME, RENAME3args, from), INV(INV_NAME, RENAME3args, to),
                             INV(INV_DIR, RENAME3args, from), INV(INV_DIR, RENAME3args, to)},
                     .nnamed = 2,
                     .named = {offsetof(RENAME3args, from), offsetof(RENAME3args, to)}},
    [NFS3_LINK] = {.obs = {POST(LINK3args, file, LINK3res, file_attributes),
                           CHANGED(LINK3args, link.dir, LINK3res, linkdir_wcc)},
                   .inv = {INV(INV_ATTRS, LINK3args, file), INV(INV_NAME, LINK3args, link),
                           INV(INV_DIR, LINK3args, link)}},
    [NFS3_READDIR] = {.obs = {POST(READDIR3args, dir, READDIR3res, dir_attributes),
                              EVIDENCE(READDIR3args, dir, READDIR3res, dir_attributes, ACCESS3_READ,
                                       0)},
                      PAGE('D', READDIR3args, READDIR3res, meta_page_end_dir,
                           offsetof(READDIR3args, count)),
                      ANSWERS(READDIR3res, dir_attributes, ACCESS3_READ),
                      CLAMP(offsetof(READDIR3args, count))},
    /* the entries' attributes too; a listing with handles also proves
     * ACCESS3_LOOKUP (engine_observe_entries()) */
    [NFS3_READDIRPLUS] =
        {.obs = {POST(READDIRPLUS3args, dir, READDIRPLUS3res, dir_attributes), MORE(ARM_OK),
                 EVIDENCE(READDIRPLUS3args, dir, READDIRPLUS3res, dir_attributes, ACCESS3_READ, 0)},
         .observe_more = engine_observe_entries,
         PAGE('P', READDIRPLUS3args, READDIRPLUS3res, meta_page_end_plus,
              offsetof(READDIRPLUS3args, dircount), offsetof(READDIRPLUS3args, maxcount)),
         .record_more = meta_record_entries,
         /* the listing and the entries' handles: read and search */
         ANSWERS(READDIRPLUS3res, dir_attributes, ACCESS3_READ | ACCESS3_LOOKUP),
         .answer_refresh = meta_refresh_entries,
         CLAMP(offsetof(READDIRPLUS3args, maxcount), offsetof(READDIRPLUS3args, dircount))},
    [NFS3_FSSTAT] = {.obs = {POST(FSSTAT3args, fsroot, FSSTAT3res, obj_attributes)},
                     BLOB('s'),
                     ANSWERS(FSSTAT3res, obj_attributes, 0)},
    [NFS3_FSINFO] = {.obs = {POST(FSINFO3args, fsroot, FSINFO3res, obj_attributes)},
                     BLOB('i'),
                     .as_told = engine_fsinfo_as_told,
                     ANSWERS(FSINFO3res, obj_attributes, 0)},
    [NFS3_PATHCONF] = {.obs = {POST(PATHCONF3args, object, PATHCONF3res, obj_attributes)},
                       BLOB('c'),
                       ANSWERS(PATHCONF3res, obj_attributes, 0)},
    [NFS3_COMMIT] = {.obs = {WCC(COMMIT3args, file, COMMIT3res, file_wcc)},
                     .inv = {INV(INV_ATTRS, COMMIT3args, file)},
                     CHANGES(COMMIT3args, file)},
};
