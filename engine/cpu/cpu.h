/* The CPU (OpenMP) backend's pieces, one file each (private). */
#ifndef VOXFE_CPU_H
#define VOXFE_CPU_H

#include "../backend_ops.h"

/* Threads for an OpenMP region of this backend. */
int vox_cpu_threads(const vox_backend *be);

/* cpu_operator.c */
vox_status vox_cpu_op_create(vox_backend *be, const vox_operator_desc *desc, vox_operator **op);
void vox_cpu_op_destroy(vox_backend *be, vox_operator *op);
vox_status vox_cpu_op_set_moduli(vox_backend *be, vox_operator *op, const vox_vec *moduli);
vox_status vox_cpu_op_apply(vox_backend *be, vox_operator *op, const vox_vec *x, vox_vec *y,
                            int full);
vox_status vox_cpu_op_diagonal(vox_backend *be, vox_operator *op, vox_vec *d);
vox_status vox_cpu_op_element_energy(vox_backend *be, vox_operator *op, const vox_vec *u,
                                     vox_vec *energy, int accumulate);

/* cpu_simp.c */
vox_status vox_cpu_simp_moduli(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                               double p, double emin, vox_vec *moduli);
vox_status vox_cpu_simp_sensitivity(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                                    const vox_vec *energy, double p, double emin, vox_vec *dc);
vox_status vox_cpu_oc_update(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                             const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                             double lambda, double move, double eta, double q, vox_vec *rho_new);

/* cpu_filter.c */
vox_status vox_cpu_filter_create(vox_backend *be, const vox_grid *grid, double radius,
                                 const uint8_t *active, vox_filter **filter);
void vox_cpu_filter_destroy(vox_backend *be, vox_filter *filter);
vox_status vox_cpu_filter_apply(vox_backend *be, vox_filter *f, const vox_vec *in, vox_vec *out);
vox_status vox_cpu_filter_transpose(vox_backend *be, vox_filter *f, const vox_vec *in,
                                    vox_vec *out);
vox_status vox_cpu_filter_sensitivity(vox_backend *be, vox_filter *f, const vox_vec *rho,
                                      const vox_vec *dc, double gamma, vox_vec *out);

#endif
