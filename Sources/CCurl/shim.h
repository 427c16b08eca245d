// libcurl for the app half on a board (GaenApp's HTTPSession). curl_easy_setopt and
// curl_easy_getinfo are variadic, which Swift cannot call: these typed wrappers are the only
// addition, one per argument type.
#ifndef GAEND_CCURL_SHIM_H
#define GAEND_CCURL_SHIM_H
#include <curl/curl.h>

typedef size_t (*gaend_curl_data_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode gaend_curl_set_long(CURL *h, CURLoption option, long value) { return curl_easy_setopt(h, option, value); }
static inline CURLcode gaend_curl_set_string(CURL *h, CURLoption option, const char *value) { return curl_easy_setopt(h, option, value); }
static inline CURLcode gaend_curl_set_pointer(CURL *h, CURLoption option, void *value) { return curl_easy_setopt(h, option, value); }
static inline CURLcode gaend_curl_set_slist(CURL *h, CURLoption option, struct curl_slist *value) { return curl_easy_setopt(h, option, value); }
static inline CURLcode gaend_curl_set_callback(CURL *h, CURLoption option, gaend_curl_data_callback value) { return curl_easy_setopt(h, option, value); }
static inline CURLcode gaend_curl_get_long(CURL *h, CURLINFO info, long *value) { return curl_easy_getinfo(h, info, value); }
static inline CURLcode gaend_curl_get_double(CURL *h, CURLINFO info, double *value) { return curl_easy_getinfo(h, info, value); }
static inline CURLcode gaend_curl_get_offset(CURL *h, CURLINFO info, curl_off_t *value) { return curl_easy_getinfo(h, info, value); }
#endif
