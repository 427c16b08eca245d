// libcurl for the HTTP client (HTTPClient: the app's downloads and uploads, `gaenctl collect`),
// loaded when first used (dlopen) instead of when the process starts: the board's gaenctl is in
// gaend's binary (issue 31), and libcurl with the libraries it loads (TLS, Kerberos, LDAP, SSH:
// 27 of them) added 4.2 MiB to the resident memory of the idle daemon, which makes no HTTP
// request (scripts/measure-idle.sh). Every function HTTPClient calls goes through here.
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: typed wrappers,
// one per argument type.
#ifndef GAEND_CURL_H
#define GAEND_CURL_H
#include <curl/curl.h>
#include <time.h>

/// Loads libcurl.so.4 and the functions below, once; 0 when they are there, else -1 and
/// `gaend_curl_load_error()` says why (dlerror's words). Every wrapper loads it first: one
/// that runs without it returns CURLE_FAILED_INIT, NULL or -1.
int gaend_curl_load(void);
const char *gaend_curl_load_error(void);

CURLcode gaend_curl_global_init(long flags);
CURL *gaend_curl_easy_init(void);
void gaend_curl_easy_cleanup(CURL *handle);
void gaend_curl_easy_reset(CURL *handle);
CURLcode gaend_curl_easy_perform(CURL *handle);
const char *gaend_curl_easy_strerror(CURLcode code);
time_t gaend_curl_getdate(const char *text);
struct curl_slist *gaend_curl_slist_append(struct curl_slist *list, const char *text);
void gaend_curl_slist_free_all(struct curl_slist *list);

typedef size_t (*gaend_curl_data_callback)(char *data, size_t size, size_t count, void *context);

CURLcode gaend_curl_set_long(CURL *h, CURLoption option, long value);
CURLcode gaend_curl_set_string(CURL *h, CURLoption option, const char *value);
CURLcode gaend_curl_set_pointer(CURL *h, CURLoption option, void *value);
CURLcode gaend_curl_set_slist(CURL *h, CURLoption option, struct curl_slist *value);
CURLcode gaend_curl_set_callback(CURL *h, CURLoption option, gaend_curl_data_callback value);
CURLcode gaend_curl_set_offset(CURL *h, CURLoption option, curl_off_t value);
CURLcode gaend_curl_get_long(CURL *h, CURLINFO info, long *value);
CURLcode gaend_curl_get_double(CURL *h, CURLINFO info, double *value);
CURLcode gaend_curl_get_offset(CURL *h, CURLINFO info, curl_off_t *value);
#endif
