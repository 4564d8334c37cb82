/*
 * iotsecbench.security._tlsrecord: keeps the TLS handshake messages of a connection, in C.
 *
 * Why this exists: the negotiated group, signature algorithm, message sizes and round trips
 * come from the handshake messages. Python's only way to see them is the context's
 * `_msg_callback`, which CPython calls -- building three enum objects and a bytes object --
 * for every record and message *inside* SSL_do_handshake, so inside the TLS CPU time the
 * lab measures (~0.13 ms on a ~0.87 ms client handshake on the lab VM). Here OpenSSL's
 * msg_callback is a C function that copies the handshake messages into a list attached to
 * the SSL object (a few microseconds); Python reads them after the handshake.
 *
 *   install(ssl_ctx_address)   SSL_CTX_set_msg_callback on a context tls/openssl.py located and
 *                              checked (OpenSslContextControl)
 *   messages(ssl_address)      [(written: bool, msg_type: int, message: bytes), ...] of a
 *                              connection, or None when nothing was recorded for it. The
 *                              address is only compared with the connections the callback
 *                              saw; it is never dereferenced, so a wrong address is None,
 *                              not a crash.
 *   set_marker_fd(fd)          also write one line per handshake message, "iotsb msg w 1" (w:
 *                              written, r: read; then the message type), to fd -- a tracefs
 *                              trace_marker, so the scheduler trace shows where each message
 *                              was sent or received (measure/tracefs.py); -1 turns it off
 *   openssl_version_number()   OPENSSL_VERSION_NUMBER of the libssl this module runs, to be
 *                              compared with ssl.OPENSSL_VERSION_NUMBER before install()
 *
 * The callback runs without the GIL (CPython releases it around SSL_do_handshake) and
 * post-handshake messages can arrive on another thread, so one mutex guards every list.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/ssl.h>

typedef struct {
    int written;
    int msg_type;
    size_t length;
    unsigned char *data;
} Message;

typedef struct Transcript {
    const SSL *ssl; /* identity only */
    Message *messages;
    size_t count, capacity;
    struct Transcript *next;
} Transcript;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Transcript *transcripts; /* every connection seen and not yet freed */
static int ex_index = -1;
static int marker_fd = -1; /* set_marker_fd */

static void transcript_free(Transcript *transcript) {
    for (size_t i = 0; i < transcript->count; i++) free(transcript->messages[i].data);
    free(transcript->messages);
    free(transcript);
}

/* SSL_free -> the connection's list goes with it. */
static void on_ssl_free(void *parent, void *pointer, CRYPTO_EX_DATA *ad, int idx, long argl,
                        void *argp) {
    Transcript *transcript = pointer;
    if (transcript == NULL) return;
    pthread_mutex_lock(&lock);
    for (Transcript **link = &transcripts; *link != NULL; link = &(*link)->next) {
        if (*link == transcript) {
            *link = transcript->next;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    transcript_free(transcript);
}

static void on_message(int write_p, int version, int content_type, const void *buf,
                       size_t len, SSL *ssl, void *arg) {
    if (content_type != SSL3_RT_HANDSHAKE || len < 1) return; /* headers, alerts, CCS */
    int fd = marker_fd;
    if (fd >= 0) {
        char line[32];
        int n = snprintf(line, sizeof line, "iotsb msg %c %u", write_p ? 'w' : 'r',
                         (unsigned)((const unsigned char *)buf)[0]);
        if (write(fd, line, (size_t)n) < 0) { /* a lost marker shows as a missing group */ }
    }
    unsigned char *copy = malloc(len);
    if (copy == NULL) return; /* a lost message leaves its field None, as in Python */
    memcpy(copy, buf, len);
    pthread_mutex_lock(&lock);
    Transcript *transcript = SSL_get_ex_data(ssl, ex_index);
    if (transcript == NULL) {
        transcript = calloc(1, sizeof *transcript);
        if (transcript == NULL || !SSL_set_ex_data(ssl, ex_index, transcript)) {
            free(transcript);
            goto fail;
        }
        transcript->ssl = ssl;
        transcript->next = transcripts;
        transcripts = transcript;
    }
    if (transcript->count == transcript->capacity) {
        size_t capacity = transcript->capacity ? 2 * transcript->capacity : 16;
        Message *grown = realloc(transcript->messages, capacity * sizeof *grown);
        if (grown == NULL) goto fail;
        transcript->messages = grown;
        transcript->capacity = capacity;
    }
    transcript->messages[transcript->count++] =
        (Message){write_p, ((const unsigned char *)buf)[0], len, copy};
    pthread_mutex_unlock(&lock);
    return;
fail:
    pthread_mutex_unlock(&lock);
    free(copy);
}

static PyObject *install(PyObject *module, PyObject *address) {
    void *pointer = PyLong_AsVoidPtr(address);
    if (pointer == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a NULL SSL_CTX");
        return NULL;
    }
    SSL_CTX_set_msg_callback((SSL_CTX *)pointer, on_message);
    Py_RETURN_NONE;
}

static PyObject *messages(PyObject *module, PyObject *address) {
    void *pointer = PyLong_AsVoidPtr(address);
    if (pointer == NULL && PyErr_Occurred()) return NULL;
    PyObject *result = NULL;
    pthread_mutex_lock(&lock);
    Transcript *transcript = transcripts;
    while (transcript != NULL && transcript->ssl != pointer) transcript = transcript->next;
    if (transcript == NULL) {
        pthread_mutex_unlock(&lock);
        Py_RETURN_NONE;
    }
    result = PyList_New((Py_ssize_t)transcript->count);
    for (size_t i = 0; result != NULL && i < transcript->count; i++) {
        Message *message = &transcript->messages[i];
        PyObject *item = Py_BuildValue("(Niy#)", PyBool_FromLong(message->written),
                                       message->msg_type, message->data,
                                       (Py_ssize_t)message->length);
        if (item == NULL) Py_CLEAR(result);
        else PyList_SET_ITEM(result, (Py_ssize_t)i, item);
    }
    pthread_mutex_unlock(&lock);
    return result;
}

static PyObject *set_marker_fd(PyObject *module, PyObject *value) {
    long fd = PyLong_AsLong(value);
    if (fd == -1 && PyErr_Occurred()) return NULL;
    marker_fd = (int)fd;
    Py_RETURN_NONE;
}

static PyObject *openssl_version_number(PyObject *module, PyObject *unused) {
    return PyLong_FromUnsignedLong(OpenSSL_version_num());
}

static PyMethodDef module_methods[] = {
    {"install", install, METH_O, "install(ssl_ctx_address): record handshake messages"},
    {"messages", messages, METH_O,
     "messages(ssl_address) -> [(written, msg_type, bytes)] or None"},
    {"set_marker_fd", set_marker_fd, METH_O,
     "set_marker_fd(fd): write a line per handshake message to fd (-1: off)"},
    {"openssl_version_number", openssl_version_number, METH_NOARGS,
     "OpenSSL_version_num() of the libssl this module runs"},
    {NULL},
};

static struct PyModuleDef tlsrecord_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_tlsrecord",
    .m_doc = "TLS handshake messages recorded by a C msg_callback (see the source's header).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__tlsrecord(void) {
    ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, on_ssl_free);
    if (ex_index < 0) {
        PyErr_SetString(PyExc_ImportError, "OpenSSL: no SSL ex_data index");
        return NULL;
    }
    return PyModule_Create(&tlsrecord_module);
}
