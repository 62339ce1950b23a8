/* dlpack.h — the DLPack tensor ABI (v0.8 layout) as blkc accepts it.
 * These declarations follow the public DLPack specification so that a
 * DLTensor from numpy, PyTorch or any DLPack producer can be passed as is.
 * If the real dlpack.h was included first, its definitions are used. */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define BLKC_OWN_DLPACK 1

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U,
} DLDataTypeCode;

typedef struct {
    uint8_t code;    /* DLDataTypeCode */
    uint8_t bits;    /* 8, 16, 32, 64 */
    uint16_t lanes;  /* 1 */
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;     /* in elements; NULL = compact row-major */
    uint64_t byte_offset;
} DLTensor;

#ifdef __cplusplus
}
#endif
#endif
