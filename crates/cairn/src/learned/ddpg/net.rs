//! The actor's and the critic's networks (candle): layers, initialisation, soft updates.

use candle_core::{Device, Module, Tensor, Var};
use candle_nn::{AdamW, Linear, Optimizer, ParamsAdamW, VarMap};

use super::{SplitMix64, FINAL_INIT, LAYERS};
use crate::{Error, Result};

pub(super) fn tensor_err(e: candle_core::Error) -> Error {
    Error::InvalidArgument(format!("ddpg tensor operation failed: {e}"))
}

/// `(out, in)` of each linear layer of a network with `input` features.
pub(super) fn layer_dims(input: usize, hidden: usize) -> [(usize, usize); LAYERS] {
    [
        (hidden, input),
        (hidden, hidden),
        (hidden, hidden),
        (1, hidden),
    ]
}

/// One of the four networks: its variables live in a [`VarMap`] (names `l{i}.weight`,
/// `l{i}.bias`); `vars` keeps them in layer order for the checkpoint and the soft update.
pub(super) struct Net {
    pub(super) varmap: VarMap,
    pub(super) vars: Vec<Var>,
    pub(super) layers: Vec<Linear>,
    pub(super) tanh_out: bool,
}

impl Net {
    /// A network from its parameters: per layer, the row-major weight and the bias.
    pub(super) fn from_params(
        dims: &[(usize, usize); LAYERS],
        params: Vec<(Vec<f32>, Vec<f32>)>,
        tanh_out: bool,
    ) -> Result<Net> {
        let varmap = VarMap::new();
        let mut vars = Vec::with_capacity(2 * LAYERS);
        let mut layers = Vec::with_capacity(LAYERS);
        {
            let mut data = varmap
                .data()
                .lock()
                .map_err(|_| Error::InvalidArgument("ddpg varmap poisoned".into()))?;
            for (i, ((out, inp), (w, b))) in dims.iter().zip(params).enumerate() {
                let w = Var::from_tensor(
                    &Tensor::from_vec(w, (*out, *inp), &Device::Cpu).map_err(tensor_err)?,
                )
                .map_err(tensor_err)?;
                let b =
                    Var::from_tensor(&Tensor::from_vec(b, *out, &Device::Cpu).map_err(tensor_err)?)
                        .map_err(tensor_err)?;
                data.insert(format!("l{i}.weight"), w.clone());
                data.insert(format!("l{i}.bias"), b.clone());
                layers.push(Linear::new(
                    w.as_tensor().clone(),
                    Some(b.as_tensor().clone()),
                ));
                vars.push(w);
                vars.push(b);
            }
        }
        Ok(Net {
            varmap,
            vars,
            layers,
            tanh_out,
        })
    }

    /// A freshly initialised network (Lillicrap et al.'s initialisation).
    pub(super) fn init(
        dims: &[(usize, usize); LAYERS],
        rng: &mut SplitMix64,
        tanh_out: bool,
    ) -> Result<Net> {
        let mut params = Vec::with_capacity(LAYERS);
        for (i, &(out, inp)) in dims.iter().enumerate() {
            let bound = if i + 1 == LAYERS {
                FINAL_INIT
            } else {
                1.0 / (inp as f64).sqrt()
            };
            let mut uniform = |n: usize| -> Vec<f32> {
                (0..n)
                    .map(|_| ((rng.next_f64() * 2.0 - 1.0) * bound) as f32)
                    .collect()
            };
            let w = uniform(out * inp);
            let b = uniform(out);
            params.push((w, b));
        }
        Net::from_params(dims, params, tanh_out)
    }

    /// A copy with its own variables (a target network).
    pub(super) fn duplicate(&self, dims: &[(usize, usize); LAYERS]) -> Result<Net> {
        Net::from_params(dims, self.params()?, self.tanh_out)
    }

    pub(super) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = self.forward_pre(x, false)?;
        if self.tanh_out {
            y.tanh()
        } else {
            Ok(y)
        }
    }

    /// The output before the final `tanh`. With `frozen`, the weights enter as constants:
    /// a backward pass goes through the network to its input but computes no gradient
    /// for its weights (the actor's update needs the critic's `dQ/da`, not `dQ/dtheta`).
    pub(super) fn forward_pre(&self, x: &Tensor, frozen: bool) -> candle_core::Result<Tensor> {
        let mut x = x.clone();
        for (i, layer) in self.layers.iter().enumerate() {
            x = if frozen {
                let w = layer.weight().detach();
                let b = layer.bias().map(Tensor::detach);
                Linear::new(w, b).forward(&x)?
            } else {
                layer.forward(&x)?
            };
            if i + 1 < LAYERS {
                x = x.relu()?;
            }
        }
        Ok(x)
    }

    /// Per layer, the row-major weight and the bias.
    pub(super) fn params(&self) -> Result<Vec<(Vec<f32>, Vec<f32>)>> {
        let flat = |v: &Var| -> Result<Vec<f32>> {
            v.as_tensor()
                .flatten_all()
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(tensor_err)
        };
        self.vars
            .chunks(2)
            .map(|wb| Ok((flat(&wb[0])?, flat(&wb[1])?)))
            .collect()
    }

    /// `self <- tau * src + (1 - tau) * self`.
    pub(super) fn soft_update(&self, src: &Net, tau: f64) -> candle_core::Result<()> {
        for (t, s) in self.vars.iter().zip(&src.vars) {
            let next = ((s.as_tensor() * tau)? + (t.as_tensor() * (1.0 - tau))?)?;
            t.set(&next)?;
        }
        Ok(())
    }

    pub(super) fn optimizer(&self, lr: f64) -> Result<AdamW> {
        let params = ParamsAdamW {
            lr,
            weight_decay: 0.0,
            ..ParamsAdamW::default()
        };
        AdamW::new(self.varmap.all_vars(), params).map_err(tensor_err)
    }
}
