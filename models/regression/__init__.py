"""Regression engine of seed 000 (Rao & Murakami): cycles ~ counter events and their interactions.

Typical use::

    from whatif.models.regression import RegressionStudy, read_counter_totals

    df = read_counter_totals("totals.csv")
    res = RegressionStudy(order=2, prune="bic", folds=10, seed=1).fit(
        df, response="cycles", exclude=["l2_imiss*l2_dmiss"])
    print(res.summary())
    res.table_iv(); res.tables(); res.to_dict(); res.plot_varclus(); res.figures()  # name -> function
"""

from whatif.models.regression.data import ID_COLUMNS, read_counter_totals
from whatif.models.regression.ols import FTest, OLSFit, fit_ols
from whatif.models.regression.results import ModelFit, RegressionResults
from whatif.models.regression.study import ModelInputWarning, RegressionStudy

__all__ = ["ID_COLUMNS", "FTest", "ModelFit", "ModelInputWarning", "OLSFit", "RegressionResults",
           "RegressionStudy", "fit_ols", "read_counter_totals"]
