/* SPDX-License-Identifier: BSD-3-Clause */
/* libvoxfe: finite elements on voxel grids. Include this for the engine. */
#ifndef VOXFE_VOXFE_H
#define VOXFE_VOXFE_H

#include "voxfe/analysis.h"
#include "voxfe/backend.h"
#include "voxfe/components.h"
#include "voxfe/context.h"
#include "voxfe/element.h"
#include "voxfe/expression.h"
#include "voxfe/initial_design.h"
#include "voxfe/mma.h"
#include "voxfe/homogenize.h"
#include "voxfe/model.h"
#include "voxfe/optimizer.h"
#include "voxfe/solver.h"
#include "voxfe/symmetry.h"

#endif
