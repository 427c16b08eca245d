// libcurl through dlopen (see gaend_curl.h for why): the function table, filled once.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include "gaend_curl.h"

static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    CURLcode (*easy_perform)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    time_t (*getdate)(const char *, const time_t *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
} api;
static int loaded = -1;
static char load_error[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    // RTLD_LOCAL: its symbols stay its own; RTLD_NOW: a missing one is an error here, not later.
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(load_error, sizeof load_error, "cannot load libcurl: %s", dlerror());
        return;
    }
#define SYMBOL(field, name) \
    if (!(*(void **)&api.field = dlsym(lib, name))) { \
        snprintf(load_error, sizeof load_error, "libcurl.so.4 has no %s", name); \
        return; \
    }
    SYMBOL(global_init, "curl_global_init")
    SYMBOL(easy_init, "curl_easy_init")
    SYMBOL(easy_cleanup, "curl_easy_cleanup")
    SYMBOL(easy_reset, "curl_easy_reset")
    SYMBOL(easy_perform, "curl_easy_perform")
    SYMBOL(easy_strerror, "curl_easy_strerror")
    SYMBOL(getdate, "curl_getdate")
    SYMBOL(slist_append, "curl_slist_append")
    SYMBOL(slist_free_all, "curl_slist_free_all")
    SYMBOL(easy_setopt, "curl_easy_setopt")
    SYMBOL(easy_getinfo, "curl_easy_getinfo")
#undef SYMBOL
    loaded = 0;
}

int gaend_curl_load(void) {
    pthread_once(&once, load);
    return loaded;
}

const char *gaend_curl_load_error(void) { return load_error; }

#define READY(failure) if (gaend_curl_load() != 0) return failure

CURLcode gaend_curl_global_init(long flags) { READY(CURLE_FAILED_INIT); return api.global_init(flags); }
CURL *gaend_curl_easy_init(void) { READY(NULL); return api.easy_init(); }
void gaend_curl_easy_cleanup(CURL *handle) { READY(); api.easy_cleanup(handle); }
void gaend_curl_easy_reset(CURL *handle) { READY(); api.easy_reset(handle); }
CURLcode gaend_curl_easy_perform(CURL *handle) { READY(CURLE_FAILED_INIT); return api.easy_perform(handle); }
const char *gaend_curl_easy_strerror(CURLcode code) { READY(load_error); return api.easy_strerror(code); }
time_t gaend_curl_getdate(const char *text) { READY(-1); return api.getdate(text, NULL); }
struct curl_slist *gaend_curl_slist_append(struct curl_slist *list, const char *text) { READY(NULL); return api.slist_append(list, text); }
void gaend_curl_slist_free_all(struct curl_slist *list) { READY(); api.slist_free_all(list); }

CURLcode gaend_curl_set_long(CURL *h, CURLoption option, long value) { READY(CURLE_FAILED_INIT); return api.easy_setopt(h, option, value); }
CURLcode gaend_curl_set_string(CURL *h, CURLoption option, const char *value) { READY(CURLE_FAILED_INIT); return api.easy_setopt(h, option, value); }
CURLcode gaend_curl_set_pointer(CURL *h, CURLoption option, void *value) { READY(CURLE_FAILED_INIT); return api.easy_setopt(h, option, value); }
CURLcode gaend_curl_set_slist(CURL *h, CURLoption option, struct curl_slist *value) { READY(CURLE_FAILED_INIT); return api.easy_setopt(h, option, value); }
CURLcode gaend_curl_set_callback(CURL *h, CURLoption option, gaend_curl_data_callback value) { READY(CURLE_FAILED_INIT); return api.easy_setopt(h, option, value); }
CURLcode gaend_curl_set_offset(CURL *h, CURLoption option, curl_off_t value) { READY(CURLE_FAILED_INIT); return api.easy_setopt(h, option, value); }
CURLcode gaend_curl_get_long(CURL *h, CURLINFO info, long *value) { READY(CURLE_FAILED_INIT); return api.easy_getinfo(h, info, value); }
CURLcode gaend_curl_get_double(CURL *h, CURLINFO info, double *value) { READY(CURLE_FAILED_INIT); return api.easy_getinfo(h, info, value); }
CURLcode gaend_curl_get_offset(CURL *h, CURLINFO info, curl_off_t *value) { READY(CURLE_FAILED_INIT); return api.easy_getinfo(h, info, value); }
