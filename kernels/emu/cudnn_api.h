// The part of cuDNN's backend (graph) API the engine calls (kernels/cuda/cudnn.cu), for emulator
// builds: the names, types and values of cudnn_graph_v9.h, only what the engine uses. The
// functions are not defined here: the engine never links them, it loads a library at run time. In
// the emulator build that library is the emulated cuDNN (kernels/emu/cudnn_emu.cpp, built as
// libmcdl_cudnn_emu.so), which runs an operation graph on the host.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/emu/runtime_api.h"

extern "C" {

typedef enum {
  CUDNN_STATUS_SUCCESS = 0,
  CUDNN_STATUS_NOT_INITIALIZED = 1001,
  CUDNN_STATUS_BAD_PARAM = 2000,
  CUDNN_STATUS_BAD_PARAM_NULL_POINTER = 2002,
  CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER = 2003,
  CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED = 2004,
  CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND = 2005,
  CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT = 2006,
  CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH = 2008,
  CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES = 2009,
  CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE = 2010,
  CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE = 2012,
  CUDNN_STATUS_NOT_SUPPORTED = 3000,
  CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN = 3001,
  CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE = 3003,
  CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING = 3008,
  CUDNN_STATUS_INTERNAL_ERROR = 4000,
  CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED = 4003,
  CUDNN_STATUS_EXECUTION_FAILED = 5000,
  CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER = 5001,
} cudnnStatus_t;

typedef struct cudnnContext* cudnnHandle_t;
typedef void* cudnnBackendDescriptor_t;

typedef enum {
  CUDNN_DATA_FLOAT = 0,
  CUDNN_DATA_DOUBLE = 1,
  CUDNN_DATA_HALF = 2,
  CUDNN_DATA_INT32 = 4,
  CUDNN_DATA_BFLOAT16 = 9,
  CUDNN_DATA_INT64 = 10,
} cudnnDataType_t;

typedef enum {
  CUDNN_REDUCE_TENSOR_ADD = 0,
  CUDNN_REDUCE_TENSOR_MUL = 1,
  CUDNN_REDUCE_TENSOR_MIN = 2,
  CUDNN_REDUCE_TENSOR_MAX = 3,
} cudnnReduceTensorOp_t;

typedef enum {
  CUDNN_POINTWISE_ADD = 0,
  CUDNN_POINTWISE_MUL = 1,
  CUDNN_POINTWISE_MIN = 2,
  CUDNN_POINTWISE_MAX = 3,
  CUDNN_POINTWISE_SQRT = 4,
  CUDNN_POINTWISE_DIV = 6,
  CUDNN_POINTWISE_SUB = 9,
  CUDNN_POINTWISE_EXP = 13,
  CUDNN_POINTWISE_LOG = 15,
  CUDNN_POINTWISE_IDENTITY = 21,
  CUDNN_POINTWISE_GELU_FWD = 104,
} cudnnPointwiseMode_t;

typedef enum {
  CUDNN_ATTR_POINTWISE_MODE = 0,
  CUDNN_ATTR_POINTWISE_MATH_PREC = 1,
  CUDNN_ATTR_ENGINEHEUR_MODE = 200,
  CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH = 201,
  CUDNN_ATTR_ENGINEHEUR_RESULTS = 202,
  CUDNN_ATTR_ENGINEHEUR_DEVICEPROP = 204,
  CUDNN_ATTR_ENGINECFG_ENGINE = 300,
  CUDNN_ATTR_EXECUTION_PLAN_HANDLE = 400,
  CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401,
  CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE = 402,
  CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP = 407,
  CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR = 750,
  CUDNN_ATTR_OPERATION_POINTWISE_XDESC = 751,
  CUDNN_ATTR_OPERATION_POINTWISE_BDESC = 752,
  CUDNN_ATTR_OPERATION_POINTWISE_YDESC = 753,
  CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1 = 754,
  CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2 = 755,
  CUDNN_ATTR_OPERATIONGRAPH_HANDLE = 800,
  CUDNN_ATTR_OPERATIONGRAPH_OPS = 801,
  CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT = 802,
  CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT = 900,
  CUDNN_ATTR_TENSOR_DATA_TYPE = 901,
  CUDNN_ATTR_TENSOR_DIMENSIONS = 902,
  CUDNN_ATTR_TENSOR_STRIDES = 903,
  CUDNN_ATTR_TENSOR_UNIQUE_ID = 906,
  CUDNN_ATTR_TENSOR_IS_VIRTUAL = 907,
  CUDNN_ATTR_TENSOR_IS_BY_VALUE = 908,
  CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS = 1000,
  CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS = 1001,
  CUDNN_ATTR_VARIANT_PACK_WORKSPACE = 1003,
  CUDNN_ATTR_ENGINE_OPERATION_GRAPH = 1300,
  CUDNN_ATTR_ENGINE_GLOBAL_INDEX = 1301,
  CUDNN_ATTR_ENGINE_DEVICEPROP = 1307,
  CUDNN_ATTR_MATMUL_COMP_TYPE = 1500,
  CUDNN_ATTR_OPERATION_MATMUL_ADESC = 1520,
  CUDNN_ATTR_OPERATION_MATMUL_BDESC = 1521,
  CUDNN_ATTR_OPERATION_MATMUL_CDESC = 1522,
  CUDNN_ATTR_OPERATION_MATMUL_DESC = 1523,
  CUDNN_ATTR_REDUCTION_OPERATOR = 1600,
  CUDNN_ATTR_REDUCTION_COMP_TYPE = 1601,
  CUDNN_ATTR_OPERATION_REDUCTION_XDESC = 1610,
  CUDNN_ATTR_OPERATION_REDUCTION_YDESC = 1611,
  CUDNN_ATTR_OPERATION_REDUCTION_DESC = 1612,
  CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION = 2702,
} cudnnBackendAttributeName_t;

typedef enum {
  CUDNN_TYPE_HANDLE = 0,
  CUDNN_TYPE_DATA_TYPE = 1,
  CUDNN_TYPE_BOOLEAN = 2,
  CUDNN_TYPE_INT64 = 3,
  CUDNN_TYPE_FLOAT = 4,
  CUDNN_TYPE_DOUBLE = 5,
  CUDNN_TYPE_VOID_PTR = 6,
  CUDNN_TYPE_HEUR_MODE = 8,
  CUDNN_TYPE_POINTWISE_MODE = 14,
  CUDNN_TYPE_BACKEND_DESCRIPTOR = 15,
  CUDNN_TYPE_REDUCTION_OPERATOR_TYPE = 18,
  CUDNN_TYPE_CHAR = 24,
} cudnnBackendAttributeType_t;

typedef enum {
  CUDNN_BACKEND_POINTWISE_DESCRIPTOR = 0,
  CUDNN_BACKEND_ENGINE_DESCRIPTOR = 2,
  CUDNN_BACKEND_ENGINECFG_DESCRIPTOR = 3,
  CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR = 4,
  CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR = 5,
  CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR = 13,
  CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR = 15,
  CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR = 16,
  CUDNN_BACKEND_TENSOR_DESCRIPTOR = 17,
  CUDNN_BACKEND_MATMUL_DESCRIPTOR = 18,
  CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR = 19,
  CUDNN_BACKEND_REDUCTION_DESCRIPTOR = 21,
  CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR = 22,
  CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR = 38,  // named for the real library only: not emulated
} cudnnBackendDescriptorType_t;

typedef enum {
  CUDNN_HEUR_MODE_INSTANT = 0,
  CUDNN_HEUR_MODE_FALLBACK = 2,
  CUDNN_HEUR_MODE_A = 3,
} cudnnBackendHeurMode_t;

size_t cudnnGetVersion(void);
const char* cudnnGetErrorString(cudnnStatus_t status);
void cudnnGetLastErrorString(char* message, size_t max_size);
cudnnStatus_t cudnnCreate(cudnnHandle_t* handle);
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle);
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream);
cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptor_type,
                                           cudnnBackendDescriptor_t* descriptor);
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor);
cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor);
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t element_count, const void* elements);
cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested_element_count,
                                       int64_t* element_count, void* elements);
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t execution_plan,
                                  cudnnBackendDescriptor_t variant_pack);

// Only the emulated library defines these. How the engine tells it from the real one in its logs:
int mcdl_cudnn_emulated();
// The handles and descriptors created and not yet destroyed (a test's leak check):
int64_t mcdl_cudnn_live_objects();
}
