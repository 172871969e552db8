"""Ordinary least squares by Householder QR, the seed's fit statistics, BIC forms and the F-test.

Definitions (seed 000 §II, n observations, p coefficients including the intercept):

* ``sigma`` = sqrt(SSE / (n - p))  -- Eq. 6's residual standard deviation.
* ``r2`` = 1 - SSE / SST (SST about the mean) -- the usual R^2, equal to statsmodels ``rsquared``.
* ``r2_adj`` = 1 - sigma^2 / s_y^2 -- Eq. 6 as printed (s_y^2 with n - 1), i.e. adjusted R^2,
  equal to statsmodels ``rsquared_adj``.
* ``bic_seed`` = (n + p (ln n - 1)) / (n (n - p)) * SSE -- Eq. 5 as printed.
* ``bic_conventional`` = -2 ln L + p ln n with the Gaussian log-likelihood at the ML variance,
  ln L = -n/2 (ln 2 pi + ln(SSE/n) + 1) -- equal to statsmodels ``bic``.
* F-test (Eq. 7) of a reduced model nested in a full one:
  F = ((R^2 - R_o^2)/k) / ((1 - R^2)/(n - p - 1)) with R^2 of the full model, R_o^2 of the reduced
  one, k the difference of their residual degrees of freedom and n - p - 1 the full model's residual
  degrees of freedom (p terms besides the intercept).  With the usual R^2 this equals
  ((SSE_o - SSE)/k) / (SSE/(n - p - 1)), which is how it is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import linalg, stats

BIC_FORMS = ("seed", "conventional")


def bic_seed(sse: float, n: int, p: int) -> float:
    """Seed 000 Eq. 5: (n + p (ln n - 1)) / (n (n - p)) * SSE."""
    return (n + p * (np.log(n) - 1.0)) / (n * (n - p)) * sse


def bic_conventional(sse: float, n: int, p: int) -> float:
    """-2 ln L + p ln n for a Gaussian linear model (p coefficients, variance not counted)."""
    return n * (np.log(2.0 * np.pi) + np.log(sse / n) + 1.0) + p * np.log(n)


def bic(form: str, sse: float, n: int, p: int) -> float:
    if form == "seed":
        return bic_seed(sse, n, p)
    if form == "conventional":
        return bic_conventional(sse, n, p)
    raise ValueError(f"unknown BIC form {form!r}")


@dataclass(frozen=True, eq=False)
class OLSFit:
    """An OLS fit of ``y`` on the columns of ``X`` (the first column being the intercept)."""

    names: tuple[str, ...]
    coef: np.ndarray
    cov_unscaled: np.ndarray  # (X'X)^-1
    fitted: np.ndarray
    y: np.ndarray
    x_centered_ss: np.ndarray = field(repr=False)  # sum of squares of each column about its mean

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    @property
    def p(self) -> int:
        return int(self.coef.shape[0])

    @property
    def df_resid(self) -> int:
        return self.n - self.p

    @cached_property
    def resid(self) -> np.ndarray:
        return self.y - self.fitted

    @cached_property
    def sse(self) -> float:
        return float(self.resid @ self.resid)

    @cached_property
    def sst(self) -> float:
        d = self.y - self.y.mean()
        return float(d @ d)

    @property
    def sigma(self) -> float:
        return float(np.sqrt(self.sse / self.df_resid))

    @property
    def r2(self) -> float:
        return 1.0 - self.sse / self.sst

    @property
    def r2_adj(self) -> float:
        return 1.0 - (self.sse / self.df_resid) / (self.sst / (self.n - 1))

    @cached_property
    def std_error(self) -> np.ndarray:
        return self.sigma * np.sqrt(np.diag(self.cov_unscaled))

    @cached_property
    def t(self) -> np.ndarray:
        return self.coef / self.std_error

    @cached_property
    def p_values(self) -> np.ndarray:
        return 2.0 * stats.t.sf(np.abs(self.t), self.df_resid)

    def conf_int(self, level: float = 0.95) -> np.ndarray:
        q = stats.t.ppf(0.5 + level / 2.0, self.df_resid)
        return np.column_stack([self.coef - q * self.std_error, self.coef + q * self.std_error])

    @property
    def loglik(self) -> float:
        n = self.n
        return -0.5 * n * (np.log(2.0 * np.pi) + np.log(self.sse / n) + 1.0)

    @property
    def bic_seed(self) -> float:
        return bic_seed(self.sse, self.n, self.p)

    @property
    def bic_conventional(self) -> float:
        return bic_conventional(self.sse, self.n, self.p)

    @cached_property
    def vif(self) -> np.ndarray:
        """Variance inflation factor of each non-intercept column: 1 / (1 - R_j^2), R_j^2 from regressing
        column j on the others with an intercept; computed as [(X'X)^-1]_jj * sum (x_j - mean x_j)^2."""
        return np.diag(self.cov_unscaled)[1:] * self.x_centered_ss[1:]


def fit_ols(X: np.ndarray, y: np.ndarray, names: tuple[str, ...]) -> OLSFit:
    """Least squares by Householder QR (LAPACK ``dgeqrf``); ``X`` must have full column rank."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    q, r = np.linalg.qr(X, mode="reduced")
    coef = linalg.solve_triangular(r, q.T @ y)
    r_inv = linalg.solve_triangular(r, np.eye(r.shape[0]))
    cov_unscaled = r_inv @ r_inv.T
    xc = X - X.mean(axis=0)
    return OLSFit(names=tuple(names), coef=coef, cov_unscaled=cov_unscaled, fitted=X @ coef, y=y,
                  x_centered_ss=np.einsum("ij,ij->j", xc, xc))


@dataclass(frozen=True)
class FTest:
    """Eq. 7: does the full model fit significantly better than the nested reduced one?"""

    reduced: str
    full: str
    F: float
    df_num: int
    df_den: int
    p: float
    alpha: float

    @property
    def verdict(self) -> str:
        """``"reject"`` the reduced model (lack of fit) when p < alpha, else ``"accept"``."""
        return "reject" if self.p < self.alpha else "accept"

    def to_dict(self) -> dict:
        return {"reduced": self.reduced, "full": self.full, "F": self.F, "df_num": self.df_num,
                "df_den": self.df_den, "p": self.p, "alpha": self.alpha, "verdict": self.verdict}


def f_test(reduced: OLSFit, full: OLSFit, reduced_name: str, full_name: str, alpha: float = 0.01) -> FTest:
    k = reduced.df_resid - full.df_resid
    if k <= 0:
        raise ValueError(f"model {full_name} must have more coefficients than {reduced_name}")
    df_den = full.df_resid
    F = ((reduced.sse - full.sse) / k) / (full.sse / df_den)
    p = float(stats.f.sf(F, k, df_den))
    return FTest(reduced=reduced_name, full=full_name, F=float(F), df_num=int(k), df_den=int(df_den), p=p,
                 alpha=float(alpha))
